package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/flinkgo/flinkgo/runtime/checkpoint"
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

// exhausted is err, the failure the job ends with because its restart
// strategy allows no more restarts, saying so: how many restarts ran, the
// key that bounds them, and for checkpoint failures where to look. A job
// without restarts ("none") ends with err as it is.
func (r *restarter) exhausted(err error) error {
	key := config.ConfigFixedDelayAttempts
	switch r.cfg.Strategy {
	case "none":
		return err
	case "exponential-delay":
		key = config.ConfigExponentialAttempts
	}
	hint := ""
	if errors.Is(err, checkpoint.ErrDeclined) {
		hint = fmt.Sprintf("; the last failure is a failed checkpoint: check that the checkpoint storage (%s) has room and is writable", config.ConfigCheckpointDir)
	}
	return fmt.Errorf("job failed after %d restarts, all that the restart strategy allows (%s: %s, %s: %d)%s: %w",
		r.restarts, config.ConfigRestartStrategy, r.cfg.Strategy, key, r.cfg.Attempts, hint, err)
}
