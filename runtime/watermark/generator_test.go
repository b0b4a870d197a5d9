package watermark

import "testing"

// The cases of Flink's BoundedOutOfOrdernessWatermarksTest,
// AscendingTimestampsWatermarksTest and WatermarksWithIdleness(Timeout)Test
// are in testdata/generators.

func TestNewMonotonousHasNoDelay(t *testing.T) {
	g := NewMonotonous()
	g.OnEvent(1337)
	if g.delay != 0 || g.Current() != 1336 {
		t.Fatalf("monotonous generator: delay %d, watermark %v after 1337; want 0 and 1336", g.delay, g.Current())
	}
}
