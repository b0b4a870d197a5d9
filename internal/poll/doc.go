// Package poll is how tests wait for something another goroutine or process
// makes true (a worker started, a line was logged, a job reached a state):
// bounded polling on the condition, never a sleep for a guessed time. It
// checks the condition at once, then at intervals that grow from 1 ms to
// 50 ms (a condition that is quick to become true is seen quickly, a slow one
// costs few checks), until it holds or the timeout passes; the test then
// fails saying what it waited for. It uses timers, so a test run in a
// testing/synctest bubble waits on the bubble's clock.
//
// It is imported by tests only.
package poll
