package main

import (
	"slices"
	"strings"
	"testing"
)

const mod = "example.com/m"

const table = "# Architecture\n\n| package | job | must not |\n|---|---|---|\n" +
	"| `cfg` | config keys | import anything but the standard library |\n" +
	"| `hash` | hashing | depend on anything but `math/bits` |\n" +
	"| `task`, `job` | tasks \\| jobs | know an operator kind; import `udf/...` or Arrow (see below) |\n" +
	"| `keys` | key groups | import protocol buffers or other packages of the module (but `hash`) |\n" +
	"| `api` | the Go API | be imported by `udf/...` |\n" +
	"\nAfter the table.\n| not | a row |\n"

func TestParseTable(t *testing.T) {
	rows, err := parseTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || !slices.Equal(rows[2].packages, []string{"task", "job"}) {
		t.Fatalf("rows = %+v", rows)
	}
	rules, prose := rulesOf(mod, rows)
	if !slices.Equal(prose, []string{"task: know an operator kind", "job: know an operator kind"}) {
		t.Errorf("prose = %q", prose)
	}
	var got []string
	for _, r := range rules {
		var items []string
		for _, it := range r.items {
			items = append(items, it.label)
		}
		got = append(got, strings.TrimPrefix(r.pkg, mod+"/")+": "+strings.Join(items, "|"))
	}
	want := []string{
		"cfg: the standard library",
		"hash: `math/bits`",
		"task: `udf/...`|Arrow",
		"job: `udf/...`|Arrow",
		"keys: protocol buffers|other packages of the module (but `hash`)",
		"api: `udf/...`",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// graph builds go list's answer from "importer: imports..." lines; paths
// with a dot in their first element are another module's, single words the
// standard library's, the rest the module's.
func graph(lines ...string) map[string]*pkg {
	pkgs := map[string]*pkg{}
	get := func(name string) *pkg {
		path, std := name, false
		switch first, _, _ := strings.Cut(name, "/"); {
		case strings.Contains(first, "."):
		case first == "math" || first == "unsafe" || first == "os" || first == "fmt":
			std = true
		default:
			path = mod + "/" + name
		}
		if pkgs[path] == nil {
			pkgs[path] = &pkg{ImportPath: path, Standard: std}
		}
		return pkgs[path]
	}
	for _, l := range lines {
		from, to, _ := strings.Cut(l, ":")
		p := get(strings.TrimSpace(from))
		for _, imp := range strings.Fields(to) {
			p.Imports = append(p.Imports, get(imp).ImportPath)
		}
	}
	return pkgs
}

func TestCheckFindsViolations(t *testing.T) {
	rows, err := parseTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := rulesOf(mod, rows)
	clean := graph(
		"cfg: fmt os", "hash: math/bits", "math/bits: unsafe",
		"task: github.com/x/y", "job: task", "keys: hash", "api: job", "udf/w:",
	)
	if v, missing, unknown := check(mod, rules, clean); len(v) > 0 || len(missing) > 0 || len(unknown) > 0 {
		t.Fatalf("a graph that keeps the rules: violations %v, missing %v, unknown %v", v, missing, unknown)
	}
	for _, tc := range []struct {
		name  string
		graph map[string]*pkg
		want  string
	}{
		// As runtime/config once did, through internal/objstore.
		{"a module package in a standard-library-only one", graph("cfg: fmt store", "store: github.com/aws/sdk",
			"hash: math/bits", "task:", "job:", "keys:", "api:", "udf/w:"),
			"cfg must not import anything but the standard library (ARCHITECTURE.md), but it does: example.com/m/cfg -> example.com/m/store"},
		{"a forbidden package two imports away", graph("cfg:", "hash: math/bits", "task: plan", "plan: udf/bridge", "udf/bridge:",
			"job:", "keys:", "api:"),
			"task -> example.com/m/plan -> example.com/m/udf/bridge"},
		{"another module", graph("cfg:", "hash: math/bits", "task: github.com/apache/arrow-go/v18/arrow", "job:", "keys:", "api:", "udf/w:"),
			"task must not import `udf/...` or Arrow"},
		{"the module but the exception", graph("cfg:", "hash: math/bits", "task:", "job:", "keys: hash cfg", "api:", "udf/w:"),
			"keys -> example.com/m/cfg"},
		{"more than allowed", graph("cfg:", "hash: math/bits os", "task:", "job:", "keys:", "api:", "udf/w:"),
			"hash must not depend on anything but `math/bits` (ARCHITECTURE.md), but it does: example.com/m/hash -> os"},
		{"imported from below", graph("cfg:", "hash: math/bits", "task:", "job:", "keys:", "api:", "udf/w: udf/v", "udf/v: api"),
			"api must not be imported by `udf/...` (ARCHITECTURE.md), but it does: example.com/m/udf/v -> example.com/m/api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, _ := check(mod, rules, tc.graph)
			if len(v) != 1 || !strings.Contains(v[0].String(), tc.want) {
				t.Fatalf("violations %v; want one containing %q", v, tc.want)
			}
		})
	}
	// A rule naming no package would hold vacuously: it is reported.
	noUDF := graph("cfg:", "hash: math/bits", "task:", "job:", "keys:", "api:")
	if _, _, unknown := check(mod, rules, noUDF); len(unknown) == 0 || !strings.Contains(unknown[0], "example.com/m/udf/...") {
		t.Fatalf("unknown = %v; want udf/... reported", unknown)
	}
}
