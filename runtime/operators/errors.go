package operators

import (
	"errors"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

// ErrorNamesOrigin reports whether err, returned by one of these
// operators, already says where it happened: a Python UDF's error names the
// function and its worker, and a lost or unstartable worker is the
// worker's failure, not its operator's. The task keeps such an error as it
// is (task.Config.ErrorNamesOrigin), so the job's failure classification
// and the client see the worker's error itself.
func ErrorNamesOrigin(err error) bool {
	var udfErr *bridge.UDFError
	return errors.As(err, &udfErr) || errors.Is(err, bridge.ErrWorkerLost) || errors.Is(err, bridge.ErrWorkerStart)
}
