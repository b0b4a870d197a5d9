package watermark_test

import (
	"fmt"
	"time"

	"github.com/flinkgo/flinkgo/runtime/watermark"
)

// printer is the operator's output in these examples.
type printer struct{}

func (printer) EmitWatermark(w watermark.Watermark) { fmt.Println("watermark", w) }
func (printer) EmitStatus(s watermark.Status)       { fmt.Println("status", s) }

// A task with three input channels forwards the minimum over its active
// channels.
func ExampleValve() {
	v := watermark.NewValve(3)
	v.InputWatermark(0, 10).SendTo(printer{})
	v.InputWatermark(1, 7).SendTo(printer{})
	v.InputWatermark(2, 3).SendTo(printer{})           // every channel has one: 3
	v.InputStatus(2, watermark.Idle).SendTo(printer{}) // channel 2 no longer holds it back: 7
	// Output:
	// watermark 3
	// watermark 7
}

// A source subtask reading two files: each has a bounded-out-of-orderness
// generator with idleness; the subtask sends the minimum over the files
// that are not idle, every auto-watermark interval.
func ExampleSplits() {
	clock := watermark.NewManualClock(time.Unix(0, 0))
	delay, _ := watermark.ParseMillis("5 s")
	splits := watermark.NewSplits(func() (watermark.Generator, error) {
		inner, err := watermark.NewBoundedOutOfOrderness(delay)
		if err != nil {
			return nil, err
		}
		return watermark.NewWithIdleness(inner, time.Minute, clock)
	})
	_ = splits.Add("clicks-1.csv")
	_ = splits.Add("clicks-2.csv")
	e, _ := splits.OnEvent("clicks-1.csv", 60_000)
	e.SendTo(printer{}) // nothing before a row, usually
	e, _ = splits.OnEvent("clicks-2.csv", 30_000)
	e.SendTo(printer{})
	clock.Advance(200 * time.Millisecond)
	splits.OnPeriodicEmit().SendTo(printer{})
	// Output:
	// watermark 24999
}
