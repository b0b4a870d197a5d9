// Package dashboard is flinkgo's web dashboard: plain HTML, CSS and
// JavaScript embedded in the binary and served by the REST API's server
// (package rest) at /, /index.html and /static/. The page reads Flink's
// REST paths only, so it shows what any Flink client would see: the jobs
// list, a job's graph with each vertex's parallelism, rates, busy and
// backpressure ratios, its checkpoints and exceptions, and buttons that
// cancel it, trigger a savepoint and rescale a vertex.
//
// Nothing from the API reaches the page as markup: the script builds
// elements and sets their text (textContent), never innerHTML, and every
// answer carries a Content-Security-Policy that allows scripts and styles
// from this server only (no inline script, no eval), so a job or operator
// name cannot run code in the operator's browser. When the REST API has a
// token (rest.auth-token), the page asks for it on the first refused call
// and sends it as a bearer header, keeping it for the browser tab only
// (sessionStorage).
package dashboard
