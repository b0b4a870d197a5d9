package task

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/ident"
	"github.com/flinkgo/flinkgo/runtime/operator"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// forwardingOperator hands every batch on to the operators chained to it.
type forwardingOperator struct{ operator.Base }

func (forwardingOperator) Process(ctx context.Context, _ int, b arrow.RecordBatch, emit operator.Emit) error {
	b.Retain()
	return emit(ctx, b)
}

// workerError stands for an error that says where it happened itself, as
// a Python worker's does; the task knows it only through the hook.
type workerError struct{}

func (workerError) Error() string { return `UDF "f" raised in worker 7: ValueError` }

// chainOf links head -> child, as a task chains them, both with the hook.
func chainOf(head, child operator.Operator, namesOrigin func(error) bool) *link {
	newLink := func(name string, op operator.Operator) *link {
		return &link{op: &plan.Operator{Name: name, UID: name}, proc: op, count: &operator.Counters{},
			wmIn: watermark.MinWatermark, wmOut: watermark.MinWatermark, namesOrigin: namesOrigin,
			id: ident.Subtask{Operator: name, UID: name}}
	}
	h, c := newLink("map", head), newLink("udf", child)
	h.children = []*link{c}
	return h
}

// erringOperator fails every batch with err.
type erringOperator struct {
	operator.Base
	err error
}

func (o erringOperator) Process(context.Context, int, arrow.RecordBatch, operator.Emit) error {
	return o.err
}

// An error that names its own origin (by the hook the operators give the
// task) reaches the job as it is, through every operator of the chain;
// any other is named after the operator that returned it, once.
func TestErrorNamedAfterItsOperatorUnlessItNamesItsOrigin(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	bld.Field(0).(*array.Int64Builder).Append(1)
	b := bld.NewRecordBatch()
	bld.Release()
	defer b.Release()
	isWorkerError := func(err error) bool { return errors.As(err, new(workerError)) }

	err := chainOf(forwardingOperator{}, erringOperator{err: workerError{}}, isWorkerError).process(t.Context(), 0, b)
	if _, ok := err.(workerError); !ok {
		t.Fatalf("the worker's error became %T %q; want it as it is", err, err)
	}

	err = chainOf(forwardingOperator{}, erringOperator{err: errInjected}, isWorkerError).process(t.Context(), 0, b)
	var taskErr *TaskError
	if !errors.As(err, &taskErr) || taskErr.Operator != "udf" || taskErr.Err != errInjected {
		t.Fatalf("got %v; want the injected failure named after operator udf alone", err)
	}

	// Without the hook the task knows no error that names its origin.
	err = chainOf(forwardingOperator{}, erringOperator{err: workerError{}}, nil).process(t.Context(), 0, b)
	if !errors.As(err, &taskErr) || taskErr.Operator != "udf" {
		t.Fatalf("got %v; want it named after operator udf", err)
	}
}
