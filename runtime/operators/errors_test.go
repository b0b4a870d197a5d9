package operators

import (
	"errors"
	"fmt"
	"testing"

	"github.com/flinkgo/flinkgo/udf/bridge"
)

func TestErrorNamesOriginKnowsTheWorkersErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("bundle: %w", &bridge.UDFError{UDF: "f", Type: "ValueError", Message: "bad"}), true},
		{fmt.Errorf("bundle: %w", bridge.ErrWorkerLost), true},
		{bridge.ErrWorkerStart, true},
		{errors.New("window: a row without its key"), false},
	} {
		if got := ErrorNamesOrigin(tc.err); got != tc.want {
			t.Errorf("ErrorNamesOrigin(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
