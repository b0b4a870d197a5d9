// Package autoscaler decides the parallelism of Python UDF operators the way
// the Flink Kubernetes operator's JobVertexScaler does (DS2, Kalavri et al.,
// OSDI '18): a vertex's true processing rate is its input rate divided by its
// busy ratio over a metrics window; the parallelism needed to take the target
// rate at the target utilization is ceil(p * targetRate / (trueRate *
// target)), clamped to the UDF's declared concurrency bounds. Scale-up happens
// as soon as the expected utilization leaves the band above the target;
// scale-down only after the scale-down interval has passed since the last
// rescale, so a steady load does not make the job oscillate.
//
// Decide is pure (inputs in, a Decision with its reason out) so the contract
// is tested as a unit with fake metric windows.
package autoscaler
