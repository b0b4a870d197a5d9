package job

import (
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
)

// restarter is the restart strategy of a job (RestartConfig): allow is
// asked once per failure, nextDelay once per restart.
type restarter struct {
	cfg      config.RestartConfig
	restarts int
	backoff  time.Duration
}

func newRestarter(cfg config.RestartConfig) *restarter {
	return &restarter{cfg: cfg, backoff: cfg.Delay}
}

// allow reports whether one more restart is allowed.
func (r *restarter) allow() bool {
	return r.cfg.Strategy != "none" && r.restarts < r.cfg.Attempts
}

// nextDelay counts a restart and returns how long to wait before it.
func (r *restarter) nextDelay() time.Duration {
	r.restarts++
	d := r.backoff
	if r.cfg.Strategy == "exponential-delay" {
		r.backoff = min(time.Duration(float64(r.backoff)*r.cfg.Multiplier), r.cfg.MaxBackoff)
	}
	return d
}
