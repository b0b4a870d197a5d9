package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// ruleKind is what a checked clause says.
type ruleKind int

const (
	// forbid: the package must not depend on any of items, directly or not.
	forbid ruleKind = iota
	// allowOnly: the package may import only items (and what they import).
	allowOnly
	// notImportedBy: no package under items may depend on the package.
	notImportedBy
)

// item is a set of packages a rule names.
type item struct {
	label    string
	paths    []string // import paths of single packages
	prefixes []string // import paths; each covers itself and the packages under it (written path/...)
	std      bool     // the standard library
	module   bool     // every package of the module but except and the package itself
	except   []string // import path prefixes
}

// rule is one checked clause of a row.
type rule struct {
	pkg    string // import path
	clause string // as written in the table
	kind   ruleKind
	items  []item
}

// row is one row of the package table.
type row struct {
	packages []string // module-relative, as written
	mustNot  string
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// parseTable reads the package table (a header with a "must not" column)
// from ARCHITECTURE.md.
func parseTable(r io.Reader) ([]row, error) {
	var rows []row
	col := -1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if col >= 0 && len(rows) > 0 {
				break // the table ended
			}
			continue
		}
		cells := splitCells(line)
		if col < 0 {
			col = slices.Index(cells, "must not")
			continue
		}
		if strings.HasPrefix(cells[0], "---") || len(cells) <= col {
			continue
		}
		var pkgs []string
		for _, m := range backquoted.FindAllStringSubmatch(cells[0], -1) {
			pkgs = append(pkgs, m[1])
		}
		rows = append(rows, row{packages: pkgs, mustNot: cells[col]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if col < 0 || len(rows) == 0 {
		return nil, errors.New(`no package table with a "must not" column`)
	}
	return rows, nil
}

// splitCells splits a table line at the pipes that are not escaped (\|).
func splitCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var (
	butModule   = regexp.MustCompile(`^other packages of the module(?: \(but (.+)\))?$`)
	parentheses = regexp.MustCompile(`\s*\([^)]*\)`)
	listSep     = regexp.MustCompile(`, | or | and `)
)

// parseClause makes a rule of one clause of package pkg's cell, or reports
// that it is prose (ok false).
func parseClause(module, pkg, clause string) (rule, bool) {
	r := rule{pkg: pkg, clause: clause}
	var list string
	switch {
	case clause == "import anything of the module":
		r.items = []item{{label: "the module", module: true}}
		return r, true
	case strings.HasPrefix(clause, "import anything but "):
		r.kind, list = allowOnly, strings.TrimPrefix(clause, "import anything but ")
	case strings.HasPrefix(clause, "depend on anything but "):
		r.kind, list = allowOnly, strings.TrimPrefix(clause, "depend on anything but ")
	case strings.HasPrefix(clause, "be imported by "):
		r.kind, list = notImportedBy, strings.TrimPrefix(clause, "be imported by ")
	case strings.HasPrefix(clause, "import "):
		r.kind, list = forbid, strings.TrimPrefix(clause, "import ")
	default:
		return r, false
	}
	// "other packages of the module (but `x`)" keeps its parenthesis;
	// other parentheses are remarks.
	var modItem *item
	if i := strings.Index(list, "other packages of the module"); i >= 0 {
		m := butModule.FindStringSubmatch(list[i:])
		if m == nil {
			return r, false
		}
		modItem = &item{label: m[0], module: true}
		for _, e := range backquoted.FindAllStringSubmatch(m[1], -1) {
			modItem.except = append(modItem.except, resolve(module, e[1]))
		}
		list = strings.TrimSuffix(strings.TrimSpace(list[:i]), ",")
		list = strings.TrimSuffix(strings.TrimSuffix(list, " or"), " and")
	}
	list = parentheses.ReplaceAllString(list, "")
	if strings.TrimSpace(list) != "" {
		for _, word := range listSep.Split(list, -1) {
			it, ok := parseItem(module, strings.TrimSpace(word))
			if !ok {
				return r, false
			}
			r.items = append(r.items, it)
		}
	}
	if modItem != nil {
		r.items = append(r.items, *modItem)
	}
	return r, len(r.items) > 0
}

// parseItem reads one named set of packages.
func parseItem(module, word string) (item, bool) {
	switch word {
	case "the standard library":
		return item{label: word, std: true}, true
	case "Arrow":
		return item{label: word, prefixes: []string{"github.com/apache/arrow-go"}}, true
	case "protocol buffers":
		return item{label: word, prefixes: []string{"google.golang.org/protobuf", "github.com/golang/protobuf"}}, true
	}
	m := backquoted.FindStringSubmatch(word)
	if m == nil || m[0] != word {
		return item{}, false
	}
	if strings.HasSuffix(m[1], "/...") {
		return item{label: word, prefixes: []string{resolve(module, m[1])}}, true
	}
	return item{label: word, paths: []string{resolve(module, m[1])}}, true
}

// resolve turns a path of the table into an import path: module-relative
// unless its first element is the standard library's or another module's.
func resolve(module, p string) string {
	p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(first, ".") || isStdRoot(first) {
		return p
	}
	return module + "/" + p
}

// isStdRoot reports whether a path's first element is a standard
// library's, for the few the table names.
func isStdRoot(first string) bool {
	switch first {
	case "math", "unsafe", "sync", "context", "os", "io", "time", "errors", "fmt", "net", "strings":
		return true
	}
	return false
}

// under reports whether path is prefix or a package under it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// matches reports whether package p is in the set it names (for pkg).
func (it item) matches(p *pkg, of, module string) bool {
	if it.std && p.Standard {
		return true
	}
	if it.module {
		if !under(p.ImportPath, module) || p.ImportPath == of {
			return false
		}
		return !slices.ContainsFunc(it.except, func(e string) bool { return under(p.ImportPath, e) })
	}
	return slices.Contains(it.paths, p.ImportPath) ||
		slices.ContainsFunc(it.prefixes, func(pre string) bool { return under(p.ImportPath, pre) })
}

// unknown returns the paths of it that name no package of pkgs (a typo in
// the table, or a package renamed: the rule would hold vacuously).
func (it item) unknown(module string, pkgs map[string]*pkg) []string {
	var out []string
	for _, path := range it.paths {
		if under(path, module) && pkgs[path] == nil {
			out = append(out, path)
		}
	}
	for _, pre := range it.prefixes {
		if under(pre, module) && !slices.ContainsFunc(sortedKeys(pkgs), func(p string) bool { return under(p, pre) }) {
			out = append(out, pre+"/...")
		}
	}
	return out
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct{ Path string }
}

// violation is one broken rule, with the imports that break it.
type violation struct {
	rule rule
	path []string // from the package to the package the rule forbids
}

func (v violation) String() string {
	return fmt.Sprintf("%s must not %s (ARCHITECTURE.md), but it does: %s", v.rule.pkg, v.rule.clause, strings.Join(v.path, " -> "))
}

// check checks rules against pkgs (every package of the module with its
// dependencies, by import path).
//
// It also returns the rows' packages that are no Go package (missing: a
// row of Python code, or of a directory of generated code) and the paths
// rules name that match no package (unknown: a typo or a rename, which
// would make a rule hold vacuously).
func check(module string, rules []rule, pkgs map[string]*pkg) (out []violation, missing, unknown []string) {
	for _, r := range rules {
		root, ok := pkgs[r.pkg]
		if !ok {
			missing = append(missing, r.pkg)
			continue
		}
		for _, it := range r.items {
			for _, u := range it.unknown(module, pkgs) {
				unknown = append(unknown, fmt.Sprintf("%s (in the rule %q of %s)", u, r.clause, r.pkg))
			}
		}
		bad := func(p *pkg) bool {
			return slices.ContainsFunc(r.items, func(it item) bool { return it.matches(p, r.pkg, module) })
		}
		switch r.kind {
		case forbid:
			if path := findPath(root, pkgs, bad, nil); path != nil {
				out = append(out, violation{r, path})
			}
		case allowOnly:
			allowed := func(p *pkg) bool { return p != root && bad(p) }
			notAllowed := func(p *pkg) bool { return p != root && !bad(p) }
			if path := findPath(root, pkgs, notAllowed, allowed); path != nil {
				out = append(out, violation{r, path})
			}
		case notImportedBy:
			for _, name := range sortedKeys(pkgs) {
				p := pkgs[name]
				if p == root || !bad(p) {
					continue
				}
				if path := findPath(p, pkgs, func(q *pkg) bool { return q == root }, nil); path != nil {
					out = append(out, violation{r, path})
					break
				}
			}
		}
	}
	return out, missing, unknown
}

// findPath searches the imports from root, not descending into the
// standard library or stop, for a package target accepts; it returns the
// chain of imports to it.
func findPath(root *pkg, pkgs map[string]*pkg, target, stop func(*pkg) bool) []string {
	from := map[string]string{root.ImportPath: ""}
	queue := []*pkg{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range p.Imports {
			q, ok := pkgs[imp]
			if !ok {
				continue
			}
			if _, seen := from[imp]; seen {
				continue
			}
			from[imp] = p.ImportPath
			if target(q) {
				var path []string
				for at := imp; at != ""; at = from[at] {
					path = append([]string{at}, path...)
				}
				return path
			}
			if !q.Standard && (stop == nil || !stop(q)) {
				queue = append(queue, q)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]*pkg) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rulesOf parses every row's clauses; the prose ones come back as text.
func rulesOf(module string, rows []row) (rules []rule, prose []string) {
	for _, rw := range rows {
		for _, p := range rw.packages {
			for clause := range strings.SplitSeq(rw.mustNot, ";") {
				clause = strings.TrimSpace(clause)
				if clause == "" {
					continue
				}
				r, ok := parseClause(module, resolve(module, p), clause)
				if ok {
					rules = append(rules, r)
				} else {
					prose = append(prose, fmt.Sprintf("%s: %s", p, clause))
				}
			}
		}
	}
	return rules, prose
}

// listPackages runs go list -deps -json ./... in dir.
func listPackages(dir string) (string, map[string]*pkg, error) {
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list -m: %w", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Module", "./...")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go list -deps: %w", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		p := new(pkg)
		if err := dec.Decode(p); err != nil {
			return "", nil, err
		}
		pkgs[p.ImportPath] = p
	}
	return strings.TrimSpace(string(mod)), pkgs, nil
}

func main() {
	verbose := len(os.Args) > 1 && os.Args[1] == "-v"
	f, err := os.Open("ARCHITECTURE.md")
	if err != nil {
		fatal(err)
	}
	rows, err := parseTable(f)
	f.Close()
	if err != nil {
		fatal(fmt.Errorf("ARCHITECTURE.md: %w", err))
	}
	module, pkgs, err := listPackages(".")
	if err != nil {
		fatal(err)
	}
	rules, prose := rulesOf(module, rows)
	violations, missing, unknown := check(module, rules, pkgs)
	if verbose {
		for _, p := range prose {
			fmt.Println("not checked (prose):", p)
		}
		for _, m := range missing {
			fmt.Println("not checked (no such Go package):", m)
		}
	}
	for _, v := range violations {
		fmt.Fprintln(os.Stderr, v)
	}
	for _, u := range unknown {
		fmt.Fprintln(os.Stderr, "archcheck: ARCHITECTURE.md names a package that does not exist:", u)
	}
	if len(unknown) > 0 {
		os.Exit(1)
	}
	if len(violations) > 0 {
		fmt.Fprintf(os.Stderr, "archcheck: %d import rules of ARCHITECTURE.md broken: change the imports, or the table if the rule changed\n", len(violations))
		os.Exit(1)
	}
	fmt.Printf("archcheck: %d import rules of ARCHITECTURE.md hold (%d clauses are prose, not checked)\n", len(rules), len(prose))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "archcheck:", err)
	os.Exit(2)
}
