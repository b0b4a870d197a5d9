package plan

// Roles of the operators with_watermark becomes (Operator.Role).
const (
	RoleExtractTimestamp = "extract-timestamp"
	RoleWatermarks       = "watermarks"
)

// watermarkOps turns a with_watermark node into its operators:
//
//	[extract-timestamp] watermarks
//
// The timestamp extractor is there when the event time is an expression:
// the node's time_extractor select, with its Python UDF calls taken out as
// for any select (expand). Every uid derives from the node's (the user's
// .uid, else "<kind>-<id>", docs/semantics.md#uids), so a savepoint still
// matches when operators are added elsewhere: "<uid>/extract-timestamp"
// (when the extractor is one UDF operator, that operator's; else the
// prefix of its operators') and "<uid>/watermarks".
func watermarkOps(info nodeInfo, s settings) []*Operator {
	n := info.node
	var ops []*Operator
	if ext := n.WatermarkAssigner.TimeExtractor; ext != nil {
		x := info
		x.uid, x.name = info.uid+"/"+RoleExtractTimestamp, info.name+"/"+RoleExtractTimestamp
		x.kind = KindSelect
		x.node = &Node{ID: n.ID, UID: x.uid, Name: x.name, OutputSchema: n.OutputSchema,
			Kind: KindSelect, Select: ext}
		if anyUDF(ext.Columns) {
			ops = expand(x, s)
			if len(ops) == 1 {
				ops[0].UID = x.uid
			}
		} else {
			ops = []*Operator{{
				UID: x.uid, Name: x.name, Kind: KindSelect, Role: RoleExtractTimestamp, NodeID: n.ID,
				Parallelism: info.parallelism, ParallelismFrom: info.parallelismFrom,
				Node: x.node, OutputSchema: n.OutputSchema,
			}}
		}
	}
	return append(ops, &Operator{
		UID: info.uid + "/" + RoleWatermarks, Name: info.name + "/" + RoleWatermarks,
		Kind: KindWatermarkAssigner, Role: RoleWatermarks, NodeID: n.ID,
		Parallelism: info.parallelism, ParallelismFrom: info.parallelismFrom,
		Node: n, OutputSchema: n.OutputSchema,
	})
}

func anyUDF(cols []*NamedExpr) bool {
	for _, c := range cols {
		if hasUDF(c.Expr) {
			return true
		}
	}
	return false
}
