package checkpoint

// RestorePoint is a completed snapshot to start from; Base is the
// directory its relative paths resolve against.
type RestorePoint struct {
	Meta *Metadata
	Base string
}

// Operator returns the state of the operator with uid, or nil (also for a
// nil RestorePoint: a fresh start).
func (r *RestorePoint) Operator(uid string) *OperatorState {
	if r == nil {
		return nil
	}
	for i := range r.Meta.Operators {
		if r.Meta.Operators[i].UID == uid {
			return &r.Meta.Operators[i]
		}
	}
	return nil
}
