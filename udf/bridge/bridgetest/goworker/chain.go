package goworker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// call is one UDF of the chain.
type call struct {
	name   string
	op     string
	arg    int64
	args   []string
	output string
}

// chain is the fused chain of one OpenRequest (python/flinkgo/worker/chain.py).
type chain struct {
	output   *arrow.Schema
	calls    []call
	batchMap bool
	// Behaviours of the whole worker that a UDF of the chain asks for.
	failOpen, failClose string // the UDF's name
	noDataSocket        bool
	wrongSeq, badArrow  bool
	mem                 memory.Allocator
}

var knownOps = []string{
	string(Identity), string(AddOne), string(Affine), string(Upper), string(Hang), string(SpawnChild), string(KillSelf), string(ShortResult),
	string(WrongType), string(WrongSeq), string(BadArrow), string(CraftedArrow), string(Chatty), string(Flood), string(FloodCrash), string(FailOpen),
	string(FailClose), string(NoDataSocket), string(Repeat), "fail_on", "crash_on",
}

func newChain(req *workerpb.OpenRequest) (*chain, error) {
	in, err := arrowipc.DecodeSchema(req.GetInputSchema())
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	out, err := arrowipc.DecodeSchema(req.GetOutputSchema())
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	c := &chain{output: out, mem: memory.NewGoAllocator()}
	for _, pc := range req.GetCalls() {
		spec := pc.GetUdf()
		op, arg, err := parseFunc(spec.GetPayload())
		if err != nil {
			return nil, &udfError{udf: spec.GetName(), err: err}
		}
		if !slices.Contains(knownOps, op) {
			return nil, &udfError{udf: spec.GetName(), err: fmt.Errorf("unknown Go worker function %q", op)}
		}
		cl := call{name: spec.GetName(), op: op, arg: arg, args: pc.GetArgs(), output: pc.GetOutput()}
		if cl.output == "" {
			cl.output = cl.name
		}
		switch Func(op) {
		case FailOpen:
			c.failOpen = cl.name
		case FailClose:
			c.failClose = cl.name
		case NoDataSocket:
			c.noDataSocket = true
		case WrongSeq:
			c.wrongSeq = true
		case BadArrow:
			c.badArrow = true
		}
		if spec.GetFuncType() == workerpb.FuncType_FUNC_TYPE_PANDAS_BATCH {
			c.batchMap = true
		}
		c.calls = append(c.calls, cl)
	}
	if c.batchMap {
		if len(c.calls) != 1 {
			return nil, errors.New("a map_batches function must be alone in its chain")
		}
		return c, nil
	}
	known := in.Fields()
	names := make(map[string]bool)
	for _, f := range known {
		names[f.Name] = true
	}
	for _, cl := range c.calls {
		for _, a := range cl.args {
			if !names[a] {
				return nil, &udfError{udf: cl.name, err: fmt.Errorf("argument column %q is neither an input column nor an output of an earlier UDF", a)}
			}
		}
		if len(cl.args) == 0 {
			return nil, &udfError{udf: cl.name, err: errors.New("a Go worker function takes one argument column")}
		}
		names[cl.output] = true
	}
	for _, f := range out.Fields() {
		if !names[f.Name] {
			return nil, fmt.Errorf("output column %q is produced by no UDF of the chain", f.Name)
		}
	}
	return c, nil
}

func (c *chain) names() []string {
	out := make([]string, len(c.calls))
	for i, cl := range c.calls {
		out[i] = cl.name
	}
	return out
}

// apply runs the chain over one batch and returns its result message.
func (c *chain) apply(in *workerpb.Batch) (*workerpb.BatchResult, error) {
	batch, err := arrowipc.DecodeBatch(in.GetArrowIpc(), c.mem)
	if err != nil {
		return nil, fmt.Errorf("batch %d is not an Arrow IPC stream: %w", in.GetSeq(), err)
	}
	defer batch.Release()
	out, err := c.run(batch)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	res := &workerpb.BatchResult{Seq: in.GetSeq()}
	if c.wrongSeq {
		res.Seq++
	}
	if c.badArrow {
		res.ArrowIpc = []byte("these bytes are not Arrow IPC")
		return res, nil
	}
	var buf bytes.Buffer
	if err := arrowipc.EncodeBatch(&buf, out, c.mem); err != nil {
		return nil, err
	}
	res.ArrowIpc = buf.Bytes()
	return res, nil
}

func (c *chain) run(batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	if c.batchMap {
		return c.repeat(batch)
	}
	columns := make(map[string]arrow.Array)
	for i, f := range batch.Schema().Fields() {
		columns[f.Name] = batch.Column(i)
	}
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for _, cl := range c.calls {
		args := make([]arrow.Array, len(cl.args))
		for i, a := range cl.args {
			args[i] = columns[a]
		}
		col, err := c.invoke(cl, args)
		if err != nil {
			return nil, &udfError{udf: cl.name, err: err}
		}
		made = append(made, col)
		columns[cl.output] = col
	}
	// The result's fields are the declared outputs with the types the
	// functions produced: a wrong type is for the host to catch.
	rows := batch.NumRows()
	fields := make([]arrow.Field, c.output.NumFields())
	cols := make([]arrow.Array, c.output.NumFields())
	for i, f := range c.output.Fields() {
		cols[i] = columns[f.Name]
		fields[i] = arrow.Field{Name: f.Name, Type: cols[i].DataType(), Nullable: true}
		rows = min(rows, int64(cols[i].Len()))
	}
	for i, col := range cols {
		cols[i] = array.NewSlice(col, 0, rows)
		made = append(made, cols[i])
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows), nil
}

// repeat is the map_batches function Repeat: every row twice.
func (c *chain) repeat(batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, c.output.NumFields())
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, f := range c.output.Fields() {
		idx := batch.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			return nil, &udfError{udf: c.calls[0].name, err: fmt.Errorf("column %q is not in the batch", f.Name)}
		}
		col := batch.Column(idx[0])
		doubled, err := array.Concatenate([]arrow.Array{col, col}, c.mem)
		if err != nil {
			return nil, err
		}
		cols[i] = doubled
	}
	return array.NewRecordBatch(c.output, cols, 2*batch.NumRows()), nil
}

// invoke applies one function to its argument columns; the result is new.
func (c *chain) invoke(cl call, args []arrow.Array) (arrow.Array, error) {
	x := args[0]
	switch cl.op {
	case string(Identity), string(WrongSeq), string(BadArrow), string(NoDataSocket), string(FailOpen), string(FailClose):
		x.Retain()
		return x, nil
	case string(CraftedArrow):
		offsets := make([]int32, x.Len()+1)
		for i := 1; i < len(offsets); i++ {
			offsets[i] = int32(3 + 3*(i%2)) // 6, 3, 6, ...: backwards every other row
		}
		data := array.NewData(arrow.BinaryTypes.String, x.Len(), []*memory.Buffer{nil,
			memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes([]byte("abcdef"))}, nil, 0, 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	case string(Chatty):
		first := "(empty)"
		if x.Len() > 0 {
			first = x.ValueStr(0)
		}
		fmt.Fprintf(os.Stdout, "printed by the udf %s\n", first)
		fmt.Fprintln(stderr, ChattyStderrLine)
		x.Retain()
		return x, nil
	case string(Flood):
		_, _ = os.Stdout.Write(append(bytes.Repeat([]byte{'y'}, FloodBytes), '\n'))
		x.Retain()
		return x, nil
	case string(FloodCrash):
		_, _ = stderr.Write(bytes.Repeat([]byte{'x'}, FloodBytes))
		os.Exit(3)
	case string(AddOne):
		return c.arith(x, 1, 1)
	case string(Affine):
		return c.arith(x, 2, 1)
	case string(Upper):
		s, ok := x.(*array.String)
		if !ok {
			return nil, fmt.Errorf("upper takes a string column, got %s", x.DataType())
		}
		b := array.NewStringBuilder(c.mem)
		defer b.Release()
		for i := range s.Len() {
			if s.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(strings.ToUpper(s.Value(i)))
			}
		}
		return b.NewArray(), nil
	case string(Hang):
		select {}
	case string(KillSelf):
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		select {}
	case string(SpawnChild):
		child := exec.Command("sleep", "20")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			return nil, err
		}
		select {}
	case string(ShortResult):
		return array.NewSlice(x, 0, int64(min(1, x.Len()))), nil
	case string(WrongType):
		b := array.NewStringBuilder(c.mem)
		defer b.Release()
		for range x.Len() {
			b.Append("not a number")
		}
		return b.NewArray(), nil
	case "fail_on", "crash_on":
		if !holds(x, cl.arg) {
			x.Retain()
			return x, nil
		}
		if cl.op == "crash_on" {
			fmt.Fprintf(stderr, "goworker: crashing on value %d\n", cl.arg)
			os.Exit(3)
		}
		return nil, fmt.Errorf("value %d is not allowed", cl.arg)
	}
	return nil, fmt.Errorf("unknown Go worker function %q", cl.op)
}

// arith returns mul*x+add for an int64 or float64 column; nulls stay null.
func (c *chain) arith(x arrow.Array, mul, add int64) (arrow.Array, error) {
	switch x := x.(type) {
	case *array.Int64:
		b := array.NewInt64Builder(c.mem)
		defer b.Release()
		for i := range x.Len() {
			if x.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(mul*x.Value(i) + add)
			}
		}
		return b.NewArray(), nil
	case *array.Float64:
		b := array.NewFloat64Builder(c.mem)
		defer b.Release()
		for i := range x.Len() {
			if x.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(float64(mul)*x.Value(i) + float64(add))
			}
		}
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("takes an int64 or float64 column, got %s", x.DataType())
}

// holds reports whether the int64 column x holds v.
func holds(x arrow.Array, v int64) bool {
	ints, ok := x.(*array.Int64)
	if !ok {
		return false
	}
	for i := range ints.Len() {
		if ints.IsValid(i) && ints.Value(i) == v {
			return true
		}
	}
	return false
}
