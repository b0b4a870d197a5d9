package watermark

// recorder is an Output that writes what it receives as "W<ms>", "ACTIVE"
// and "IDLE", so a test states the expected sequence in one line.
type recorder struct{ got []string }

func (r *recorder) EmitWatermark(w Watermark) { r.got = append(r.got, "W"+w.String()) }
func (r *recorder) EmitStatus(s Status)       { r.got = append(r.got, s.String()) }

// events is the sequence e asks to send.
func events(e Emission) []string {
	var r recorder
	e.SendTo(&r)
	return r.got
}
