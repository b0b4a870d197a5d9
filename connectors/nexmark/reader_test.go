package nexmark

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

func nexmarkSource(kind planpb.NexmarkSource_Kind, events, seed int64) *planpb.Source {
	return &planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: &planpb.NexmarkSource{Kind: kind, Events: events, Seed: seed}}}
}

// nexmarkTable reads every subtask of a Nexmark source and returns its
// columns by name, rows in subtask order (event order at any parallelism:
// each subtask owns one contiguous run of events).
type nexmarkTable map[string][]any

func readNexmark(t *testing.T, mem memory.Allocator, kind planpb.NexmarkSource_Kind, events, seed int64, p, batchRows int) nexmarkTable {
	t.Helper()
	schema := Schema(kind)
	out := nexmarkTable{}
	for i := range p {
		cfg := connector.ReaderConfig{Schema: schema, Subtask: i, Parallelism: p, BatchRows: batchRows, Allocator: mem}
		for _, b := range readSubtask(t, nexmarkSource(kind, events, seed), cfg) {
			if b.NumRows() == 0 || b.NumRows() > int64(batchRows) {
				t.Errorf("batch of %d rows, want 1 to %d", b.NumRows(), batchRows)
			}
			for c, f := range schema.Fields() {
				switch col := b.Column(c).(type) {
				case *array.Int64:
					for _, v := range col.Int64Values() {
						out[f.Name] = append(out[f.Name], v)
					}
				case *array.Timestamp:
					for _, v := range col.TimestampValues() {
						out[f.Name] = append(out[f.Name], int64(v))
					}
				case *array.String:
					for j := range col.Len() {
						out[f.Name] = append(out[f.Name], col.Value(j))
					}
				default:
					t.Fatalf("column %s is a %T", f.Name, col)
				}
			}
			b.Release()
		}
	}
	return out
}

func (tb nexmarkTable) ints(name string) []int64 {
	out := make([]int64, len(tb[name]))
	for i, v := range tb[name] {
		out[i] = v.(int64)
	}
	return out
}

func (tb nexmarkTable) strings(name string) []string {
	out := make([]string, len(tb[name]))
	for i, v := range tb[name] {
		out[i] = v.(string)
	}
	return out
}

func (tb nexmarkTable) rows() []string {
	var names []string
	for n := range tb {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []string
	for i := range tb[names[0]] {
		var row []string
		for _, n := range names {
			row = append(row, fmt.Sprint(tb[n][i]))
		}
		out = append(out, strings.Join(row, "|"))
	}
	return out
}

func TestNexmarkKindsComeInTheProportions1To3To46(t *testing.T) {
	mem := checked(t)
	for _, events := range []int64{1, 4, 5, 50, 123, 5000} {
		counts := map[planpb.NexmarkSource_Kind]int{}
		for _, k := range []planpb.NexmarkSource_Kind{planpb.NexmarkSource_PERSON, planpb.NexmarkSource_AUCTION, planpb.NexmarkSource_BID} {
			for _, p := range []int{1, 3} {
				n := len(readNexmark(t, mem, k, events, 1, p, 100)["date_time"])
				if p == 1 {
					counts[k] = n
				} else if n != counts[k] {
					t.Errorf("%d events, %v: %d rows at parallelism 3, %d at 1", events, k, n, counts[k])
				}
			}
		}
		// Event e is a person when e%50 == 0, an auction when 1 <= e%50 <= 3.
		var want [3]int
		for e := range events {
			switch off := e % 50; {
			case off == 0:
				want[0]++
			case off <= 3:
				want[1]++
			default:
				want[2]++
			}
		}
		got := [3]int{counts[planpb.NexmarkSource_PERSON], counts[planpb.NexmarkSource_AUCTION], counts[planpb.NexmarkSource_BID]}
		if got != want {
			t.Errorf("%d events: persons, auctions, bids = %v, want %v", events, got, want)
		}
	}
}

func TestNexmarkIsDeterministicBySeedAtAnyParallelism(t *testing.T) {
	mem := checked(t)
	for _, k := range []planpb.NexmarkSource_Kind{planpb.NexmarkSource_PERSON, planpb.NexmarkSource_AUCTION, planpb.NexmarkSource_BID} {
		one := readNexmark(t, mem, k, 3000, 42, 1, 1000).rows()
		three := readNexmark(t, mem, k, 3000, 42, 3, 7).rows()
		again := readNexmark(t, mem, k, 3000, 42, 2, 64).rows()
		if len(one) == 0 || !slices.Equal(one, three) || !slices.Equal(one, again) {
			t.Errorf("%v: the rows differ between parallelism 1, 3 and 2 (%d, %d, %d rows)", k, len(one), len(three), len(again))
		}
		other := readNexmark(t, mem, k, 3000, 43, 1, 1000).rows()
		if same := countEqual(one, other); same > len(one)/100 {
			t.Errorf("%v: seeds 42 and 43 give %d equal rows of %d", k, same, len(one))
		}
	}
}

func countEqual(a, b []string) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}

func TestNexmarkFieldsAreInNexmarkRanges(t *testing.T) {
	mem := checked(t)
	const events = 50_000
	persons := readNexmark(t, mem, planpb.NexmarkSource_PERSON, events, 9, 2, 333)
	auctions := readNexmark(t, mem, planpb.NexmarkSource_AUCTION, events, 9, 2, 333)
	bids := readNexmark(t, mem, planpb.NexmarkSource_BID, events, 9, 2, 333)

	// Ids count from 1000, one per person and per auction.
	for name, ids := range map[string][]int64{"person": persons.ints("id"), "auction": auctions.ints("id")} {
		for i, id := range ids {
			if id != int64(1000+i) {
				t.Fatalf("%s %d has id %d, want %d", name, i, id, 1000+i)
			}
		}
	}
	// Event e happens at 2015-07-15T00:00:00Z + e/10 ms: the last of 50 000
	// events 4999 ms after the first.
	for name, tb := range map[string]nexmarkTable{"person": persons, "auction": auctions, "bid": bids} {
		ts := tb.ints("date_time")
		if ts[0] < NexmarkBaseTime || ts[len(ts)-1] > NexmarkBaseTime+4999 || !slices.IsSorted(ts) {
			t.Errorf("%s date_time from %d to %d (sorted: %v), want within [%d, %d], sorted", name, ts[0], ts[len(ts)-1], slices.IsSorted(ts), NexmarkBaseTime, NexmarkBaseTime+4999)
		}
	}

	email := regexp.MustCompile(`^[a-z]([a-z ]*[a-z])?@[a-z]([a-z ]*[a-z])?\.com$`)
	card := regexp.MustCompile(`^\d{4} \d{4} \d{4} \d{4}$`)
	states := map[string]int{}
	emails, cards, names := persons.strings("email_address"), persons.strings("credit_card"), persons.strings("name")
	for i, st := range persons.strings("state") {
		if e := emails[i]; !email.MatchString(e) {
			t.Errorf("person %d: email %q", i, e)
		}
		if c := cards[i]; !card.MatchString(c) {
			t.Errorf("person %d: credit card %q", i, c)
		}
		if n := names[i]; len(strings.Fields(n)) != 2 {
			t.Errorf("person %d: name %q is not a first and a last name", i, n)
		}
		if !slices.Contains(nexmarkStates, st) {
			t.Errorf("person %d: state %q", i, st)
		}
		states[st]++
	}
	if len(states) != len(nexmarkStates) {
		t.Errorf("states %v: want all of %v", states, nexmarkStates)
	}

	initials, reserves, categories := auctions.ints("initial_bid"), auctions.ints("reserve"), auctions.ints("category")
	times, expiries := auctions.ints("date_time"), auctions.ints("expires")
	texts := map[string][]string{"item_name": auctions.strings("item_name"), "description": auctions.strings("description")}
	for i := range len(initials) {
		initial, reserve := initials[i], reserves[i]
		if initial < 100 || initial > 100_000_000 || reserve <= initial || reserve > initial+100_000_000 {
			t.Errorf("auction %d: initial bid %d, reserve %d", i, initial, reserve)
		}
		if c := categories[i]; c < 10 || c > 14 {
			t.Errorf("auction %d: category %d, want 10 to 14", i, c)
		}
		if at, exp := times[i], expiries[i]; exp <= at || exp > at+400 {
			t.Errorf("auction %d at %d expires at %d: want within 400 ms after", i, at, exp)
		}
		for _, col := range []string{"item_name", "description"} {
			if s := texts[col][i]; s == "" || s != strings.TrimSpace(s) || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz ") != "" {
				t.Errorf("auction %d: %s %q", i, col, s)
			}
		}
	}

	prices := bids.ints("price")
	var below1000 int
	for i, p := range prices {
		if p < 100 || p > 100_000_000 {
			t.Errorf("bid %d: price %d, want 100 to 100 000 000 cents", i, p)
		}
		if p < 100_000 {
			below1000++
		}
	}
	// log-uniform over 6 decades: half the prices below 1000.00.
	if f := float64(below1000) / float64(len(prices)); f < 0.45 || f > 0.55 {
		t.Errorf("%.2f of the prices are below 1000.00, want about 0.5", f)
	}

	// Extra pads events to Nexmark's average sizes: bids 100 bytes (32 of
	// fixed fields), auctions 500, persons 200.
	avg := func(s []string) float64 {
		var n int
		for _, v := range s {
			n += len(v)
		}
		return float64(n) / float64(len(s))
	}
	if a := avg(bids.strings("extra")); a < 66 || a > 70 {
		t.Errorf("bids' extra is %.1f bytes on average, want about 68", a)
	}
	for _, c := range []struct {
		name  string
		tb    nexmarkTable
		cols  []string
		fixed float64
		want  float64
	}{
		{"person", persons, []string{"name", "email_address", "credit_card", "city", "state", "extra"}, 8, 200},
		{"auction", auctions, []string{"item_name", "description", "extra"}, 48, 500},
	} {
		size := c.fixed
		for _, col := range c.cols {
			size += avg(c.tb.strings(col))
		}
		if size < 0.95*c.want || size > 1.05*c.want {
			t.Errorf("%s events are %.0f bytes on average, want about %.0f", c.name, size, c.want)
		}
	}
}

// TestNexmarkIdsReferenceEarlierPersonsAndAuctions checks, on the three
// kinds read separately and merged by time, that bids and auctions name
// persons and auctions made before them (or up to 10 ids ahead, Nexmark's
// lead), among the last 1000 persons and 100 auctions, with Nexmark's hot
// sellers, bidders and auctions.
func TestNexmarkIdsReferenceEarlierPersonsAndAuctions(t *testing.T) {
	mem := checked(t)
	const events = 200_000 // 4000 persons: more than the 1000 active ones
	persons := readNexmark(t, mem, planpb.NexmarkSource_PERSON, events, 3, 2, 1000)
	auctions := readNexmark(t, mem, planpb.NexmarkSource_AUCTION, events, 3, 3, 1000)
	bids := readNexmark(t, mem, planpb.NexmarkSource_BID, events, 3, 1, 1000)

	// lastBy(ts) is the largest id made at or before ms ts (10 events share
	// a ms, so it may be one id past the one made just before).
	lastBy := func(tb nexmarkTable) func(ts int64) int64 {
		ids, times := tb.ints("id"), tb.ints("date_time")
		return func(ts int64) int64 {
			i, _ := slices.BinarySearch(times, ts+1)
			if i == 0 {
				return -1
			}
			return ids[i-1]
		}
	}
	lastPerson, lastAuction := lastBy(persons), lastBy(auctions)
	check := func(what string, id, last, window int64) {
		if id > last+10 || id < last-window {
			t.Errorf("%s %d: last made %d, want within [%d, %d]", what, id, last, last-window, last+10)
		}
	}
	var hotAuction, hotBidder int
	bidTimes, bidAuctions, bidders := bids.ints("date_time"), bids.ints("auction"), bids.ints("bidder")
	for i, ts := range bidTimes {
		a, p := bidAuctions[i], bidders[i]
		check("bid: auction", a, lastAuction(ts), 101)
		check("bid: bidder", p, lastPerson(ts), 1001)
		if a%100 == 0 {
			hotAuction++
		}
		if p%100 == 1 {
			hotBidder++
		}
	}
	var hotSeller int
	auctionTimes := auctions.ints("date_time")
	for i, s := range auctions.ints("seller") {
		check("auction: seller", s, lastPerson(auctionTimes[i]), 1001)
		if s%100 == 0 {
			hotSeller++
		}
	}
	// Half the bids are for a hot auction, 3 in 4 by a hot bidder, 3 in 4
	// auctions by a hot seller (plus the random picks that hit one).
	n, m := float64(len(bids["auction"])), float64(len(auctions["id"]))
	if f := float64(hotAuction) / n; f < 0.48 || f > 0.56 {
		t.Errorf("%.3f of the bids are for a hot auction, want about 0.5", f)
	}
	if f := float64(hotBidder) / n; f < 0.73 || f > 0.78 {
		t.Errorf("%.3f of the bids are by a hot bidder, want about 0.75", f)
	}
	if f := float64(hotSeller) / m; f < 0.72 || f > 0.79 {
		t.Errorf("%.3f of the auctions are by a hot seller, want about 0.75", f)
	}
}

// TestNexmarkLastEventsOfTheLongestStream reads the end of a stream of
// NexmarkMaxEvents events, restored near its end: times and ids grow
// without overflowing.
func TestNexmarkLastEventsOfTheLongestStream(t *testing.T) {
	mem := checked(t)
	const n int64 = NexmarkMaxEvents
	lastBid := n - 1
	for lastBid%50 < 4 { // 0: a person, 1-3: auctions
		lastBid--
	}
	start := source.RangeBound(n, 127)
	restore := []connector.SplitState{{Split: fmt.Sprintf("range-%d-%d", start, n), Offset: source.EncodeOffset(source.SeqOffset{Next: n - 1000 - start})}}
	for k := range int64(127) {
		restore = append(restore, connector.SplitState{Split: fmt.Sprintf("range-%d-%d", source.RangeBound(n, k), source.RangeBound(n, k+1)), Done: true})
	}
	cfg := connector.ReaderConfig{Schema: Schema(planpb.NexmarkSource_BID), Parallelism: 1, BatchRows: 1000, Allocator: mem, Restore: restore}
	var times, auctions []int64
	for _, b := range readSubtask(t, nexmarkSource(planpb.NexmarkSource_BID, n, 1), cfg) {
		auctions = append(auctions, b.Column(0).(*array.Int64).Int64Values()...)
		for _, ts := range b.Column(3).(*array.Timestamp).TimestampValues() {
			times = append(times, int64(ts))
		}
		b.Release()
	}
	if len(times) != 920 || !slices.IsSorted(times) || times[0] < NexmarkBaseTime || times[len(times)-1] != NexmarkBaseTime+lastBid/10 {
		t.Fatalf("the last 1000 events: %d bids, times from %v to %v, want 920 sorted up to %d", len(times), times[:1], times[len(times)-1:], NexmarkBaseTime+lastBid/10)
	}
	lastAuction := NexmarkFirstID + lastBid/50*3 + 2
	for _, a := range auctions {
		if a < lastAuction-200 || a > lastAuction+10 {
			t.Fatalf("a bid for auction %d near the end, whose last auction is %d", a, lastAuction)
		}
	}
}

func TestNexmarkRejectsBadOptions(t *testing.T) {
	bid := Schema(planpb.NexmarkSource_BID)
	for _, c := range []struct {
		src    *planpb.NexmarkSource
		schema *arrow.Schema
		want   string
	}{
		{&planpb.NexmarkSource{Events: 10}, bid, "kind KIND_UNSPECIFIED is not one of person, auction, bid"},
		{&planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID}, bid, "events is 0; it must be positive"},
		{&planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID, Events: -3}, bid, "events is -3"},
		{&planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID, Events: NexmarkMaxEvents + 1}, bid, "at most 2^62"},
		{&planpb.NexmarkSource{Kind: planpb.NexmarkSource_BID, Events: 3, EventsPerSecond: -1}, bid, "events_per_second is -1"},
		{&planpb.NexmarkSource{Kind: planpb.NexmarkSource_PERSON, Events: 3}, bid, "nexmark person events have the columns (id int64, name utf8"},
	} {
		_, err := openOf(&planpb.Source{Kind: &planpb.Source_Nexmark{Nexmark: c.src}}, connector.ReaderConfig{Schema: c.schema, Parallelism: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.src, err, c.want)
		}
	}
}

// BenchmarkNexmarkBids generates bids on one goroutine and reports events
// per second (every event of the stream, 46 in 50 of them bids).
//
//	go test -run '^$' -bench NexmarkBids ./runtime/source/
func BenchmarkNexmarkBids(b *testing.B) {
	const events = 1_000_000
	schema := Schema(planpb.NexmarkSource_BID)
	startCPU := processCPU(b)
	for b.Loop() {
		for _, batch := range readSubtask(b, nexmarkSource(planpb.NexmarkSource_BID, events, 1), connector.ReaderConfig{Schema: schema, Parallelism: 1}) {
			batch.Release()
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// On a loaded machine the CPU time says more than the wall clock.
	b.ReportMetric(float64(events)*float64(b.N)/(processCPU(b)-startCPU).Seconds(), "events/cpu-s")
}

// processCPU is the CPU time (user and system) of this process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestNexmarkKeepsToTheEventRate checks the batch size that keeps each
// subtask to its share of events_per_second (a tenth of a second of
// events, of every kind), and that the ranges still read to the end;
// timings are left to benchmarks.
func TestNexmarkKeepsToTheEventRate(t *testing.T) {
	mem := checked(t)
	schema := Schema(planpb.NexmarkSource_BID)
	for _, p := range []int{1, 2} {
		src := nexmarkSource(planpb.NexmarkSource_BID, 2000, 1)
		src.GetNexmark().EventsPerSecond = 1e9 // a tenth of a second: more than the events
		r, err := openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: p, Allocator: mem, BatchRows: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(2000 / p * 46 / 50); b.NumRows() != want { // subtask 0's events: its ranges, 2000/p
			t.Errorf("p=%d, no rate limit reached: batch of %d bids, want %d", p, b.NumRows(), want)
		}
		b.Release()
		_ = r.Close()

		src.GetNexmark().EventsPerSecond = 5000 * float64(p) // 500 events per batch: 460 bids
		src.GetNexmark().Events = 50_000
		r, err = openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: p, Allocator: mem, BatchRows: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int64
		for range 3 {
			b, err := r.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, b.NumRows())
			b.Release()
		}
		_ = r.Close()
		if !slices.Equal(sizes, []int64{460, 460, 460}) {
			t.Errorf("p=%d at 5000 events/s per subtask: batches of %v bids, want 460 each", p, sizes)
		}
	}
}

func readSubtask(t testing.TB, src *planpb.Source, cfg connector.ReaderConfig) []arrow.RecordBatch {
	t.Helper()
	c, err := Source().Decode(src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	batches, err := source.ReadAll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return batches
}

func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// Nexmark's backlog is in events of its kind: the events of every kind
// its rate has due and it has not generated, times the kind's share (46
// bids in 50 events), and at most the events it has left.
func TestNexmarkPendingRecordsAreEventsOfItsKindBehindTheRate(t *testing.T) {
	mem := checked(t)
	schema := Schema(planpb.NexmarkSource_BID)
	src := nexmarkSource(planpb.NexmarkSource_BID, 20_000, 1)
	src.GetNexmark().EventsPerSecond = 50 // 5 events a batch
	r, err := openOf(src, connector.ReaderConfig{Schema: schema, Parallelism: 1, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bl, ok := r.(connector.Backlog)
	if !ok || bl.PendingRecords() != 0 {
		t.Fatalf("a rate-limited Nexmark source is a connector.Backlog with nothing pending before it starts")
	}
	g := r.(*nexmarkReader)
	// The consumer stalled for 100 s before the source began: 5000 events
	// are due at once; it reads ten batches of them.
	start := time.Now().Add(-100 * time.Second)
	g.pace.Start = start
	for range 10 {
		b, err := r.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	sent := g.pace.Sent
	lo := (int64(100*50) - sent) * 46 / 50
	got := bl.PendingRecords()
	hi := (int64(time.Since(start).Seconds()*50) - sent) * 46 / 50
	if got < lo || got > hi {
		t.Fatalf("pending %d bids with %d of the events taken, want %d to %d", got, sent, lo, hi)
	}
	// Far behind: every event left is pending, and no more.
	g.pace.Start = start.Add(-time.Hour)
	if got, want := bl.PendingRecords(), (20_000-sent)*46/50; got != want {
		t.Fatalf("pending %d bids an hour behind, want the %d left", got, want)
	}
}

// openOf opens a Nexmark source's reader through the connector.
func openOf(src *planpb.Source, cfg connector.ReaderConfig) (connector.Reader, error) {
	c, err := Source().Decode(src)
	if err != nil {
		return nil, err
	}
	return c.Open(cfg)
}
