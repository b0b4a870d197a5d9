// Command archcheck checks the import rules of ARCHITECTURE.md's package
// table against the module's real dependencies (go list -deps -json), so
// the "must not" column cannot drift from the code. `make lint` runs it.
//
// Each "must not" cell is split into clauses at semicolons. The clauses it
// checks (paths in backquotes are relative to the module unless they are
// of the standard library or another module; a path covers the packages
// under it; "Arrow" and "protocol buffers" name those libraries):
//
//	import `a`, `b` or Arrow                     none of them, directly or not
//	import other packages of the module (but `x`) nothing of the module but x
//	import anything of the module                 the same, without exceptions
//	import anything but the standard library [and Arrow]
//	depend on anything but `math/bits`            only these (their own imports are theirs)
//	be imported by `runtime/` or `udf/`           no package under them depends on it
//
// Any other clause ("start processes", "know operators") is prose: it is
// listed as not checked, never guessed at.
package main
