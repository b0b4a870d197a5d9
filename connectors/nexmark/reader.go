package nexmark

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// The Nexmark generator follows the semantics of Nexmark's (nexmark-flink's
// GeneratorConfig and its Person, Auction and Bid generators), written
// anew: a stream of events numbered 0, 1, 2, …; event e is a person, an
// auction or a bid by e mod 50 (0: person, 1-3: auction, 4-49: bid, the
// proportions 1:3:46); persons and auctions get the next id of their kind
// (from 1000), so event e knows the last person and auction ids before it
// by arithmetic. A bid's auction is, half the time, the first of the block
// of 100 auctions holding the last one (a hot auction), else one of the
// last 100 auctions or up to 10 ids ahead (Nexmark's "lead": an id an
// auction gets a little later); its bidder is, 3 times in 4, the second of
// the block of 100 persons holding the last one (a hot bidder), else one of
// the last 1000 persons or up to 10 ahead. An auction's seller is, 3 times
// in 4, the first of that block (a hot seller), else chosen as a bidder is.
// Prices are round(100 * 10^(6u)) cents for u uniform in [0, 1); strings
// are random lowercase letters (and some spaces), "extra" padding an event
// to Nexmark's average sizes (person 200, auction 500, bid 100 bytes).
// Event e happens at NexmarkBaseTime + e/10 ms (10 000 events per second
// of event time, Nexmark's default rate).
//
// Unlike Nexmark, which draws from one random stream per generator, every
// value of event e comes from a random stream seeded by (seed, e): the
// events are the same at any parallelism and after any restore, and the
// person, auction and bid sources of one seed are views of one stream
// (docs/semantics.md#nexmark-source).

// Nexmark's shape: proportions of the kinds in a block of 50 events, first
// ids, and the knobs of its default configuration.
const (
	nexmarkPersons  = 1
	nexmarkAuctions = 3
	nexmarkBids     = 46
	nexmarkEpoch    = nexmarkPersons + nexmarkAuctions + nexmarkBids

	// NexmarkFirstID is the id of the first person and the first auction.
	NexmarkFirstID = 1000
	// NexmarkFirstCategory is the smallest category; there are 5.
	NexmarkFirstCategory = 10
	nexmarkCategories    = 5

	nexmarkHotBlock        = 100  // hot sellers, bidders, auctions: the first of a block of 100 ids
	nexmarkHotAuctionOdds  = 2    // 1 in 2 bids is for a hot auction
	nexmarkHotSellerOdds   = 4    // 3 in 4 auctions are by a hot seller
	nexmarkHotBidderOdds   = 4    // 3 in 4 bids are by a hot bidder
	nexmarkInFlight        = 100  // auctions open at a time
	nexmarkActivePersons   = 1000 // persons who sell or bid
	nexmarkIDLead          = 10   // ids ahead of the last one a random pick may take
	nexmarkPersonBytes     = 200
	nexmarkAuctionBytes    = 500
	nexmarkBidBytes        = 100
	nexmarkMinStringLength = 3

	// NexmarkBaseTime is the event time of event 0: 2015-07-15T00:00:00Z in
	// ms since the epoch (Beam's Nexmark base time).
	NexmarkBaseTime = 1_436_918_400_000
	// NexmarkEventsPerSecond is the event-time rate: event e is at
	// NexmarkBaseTime + e*1000/NexmarkEventsPerSecond ms.
	NexmarkEventsPerSecond = 10_000
	nexmarkEventsPerMs     = NexmarkEventsPerSecond / 1000

	// NexmarkMaxEvents bounds a stream (29 000 years at 5 M events/s), so
	// that event numbers a little past the last one fit in an int64.
	NexmarkMaxEvents = 1 << 62
)

var nexmarkTimestamp = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// Schema is the schema of a Nexmark source of kind k, the fields of
// Nexmark's Person, Auction and Bid in snake case; nil for an unknown kind.
func Schema(k planpb.NexmarkSource_Kind) *arrow.Schema {
	i64, str := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	var fields []arrow.Field
	switch k {
	case planpb.NexmarkSource_PERSON:
		fields = []arrow.Field{
			{Name: "id", Type: i64}, {Name: "name", Type: str}, {Name: "email_address", Type: str},
			{Name: "credit_card", Type: str}, {Name: "city", Type: str}, {Name: "state", Type: str},
			{Name: "date_time", Type: nexmarkTimestamp}, {Name: "extra", Type: str},
		}
	case planpb.NexmarkSource_AUCTION:
		fields = []arrow.Field{
			{Name: "id", Type: i64}, {Name: "item_name", Type: str}, {Name: "description", Type: str},
			{Name: "initial_bid", Type: i64}, {Name: "reserve", Type: i64},
			{Name: "date_time", Type: nexmarkTimestamp}, {Name: "expires", Type: nexmarkTimestamp},
			{Name: "seller", Type: i64}, {Name: "category", Type: i64}, {Name: "extra", Type: str},
		}
	case planpb.NexmarkSource_BID:
		fields = []arrow.Field{
			{Name: "auction", Type: i64}, {Name: "bidder", Type: i64}, {Name: "price", Type: i64},
			{Name: "date_time", Type: nexmarkTimestamp}, {Name: "extra", Type: str},
		}
	default:
		return nil
	}
	return arrow.NewSchema(fields, nil) // no nulls: Nullable false

}

// Validate checks a Nexmark source's options and that the schema
// the client declared is the kind's.
func Validate(src *planpb.NexmarkSource, declared *arrow.Schema) error {
	want := Schema(src.GetKind())
	if want == nil {
		return fmt.Errorf("source: nexmark kind %v is not one of person, auction, bid", src.GetKind())
	}
	if n := src.GetEvents(); n <= 0 || n > NexmarkMaxEvents {
		return fmt.Errorf("source: nexmark events is %d; it must be positive (the stream is bounded) and at most 2^62", n)
	}
	if r := src.GetEventsPerSecond(); !(r >= 0) || math.IsInf(r, 1) {
		return fmt.Errorf("source: nexmark events_per_second is %g; it must be 0 (as fast as possible) or a positive finite rate", r)
	}
	if declared != nil && !sameColumns(declared, want) {
		return fmt.Errorf("source: nexmark %s events have the columns %s, but the plan declares %s (is the client of another version?)",
			nexmarkKindName(src.GetKind()), columnList(want), columnList(declared))
	}
	return nil
}

func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

func columnList(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func nexmarkKindName(k planpb.NexmarkSource_Kind) string {
	return strings.ToLower(k.String())
}

// nexmarkKindSlots are where a kind's events sit in a block of 50: the
// offsets [first, first+count).
func nexmarkKindSlots(k planpb.NexmarkSource_Kind) (first, count int64) {
	switch k {
	case planpb.NexmarkSource_PERSON:
		return 0, nexmarkPersons
	case planpb.NexmarkSource_AUCTION:
		return nexmarkPersons, nexmarkAuctions
	}
	return nexmarkPersons + nexmarkAuctions, nexmarkBids
}

// nexmarkCountBefore is the number of events of kind k among events [0, e).
func nexmarkCountBefore(k planpb.NexmarkSource_Kind, e int64) int64 {
	first, count := nexmarkKindSlots(k)
	return e/nexmarkEpoch*count + min(max(e%nexmarkEpoch-first, 0), count)
}

// nexmarkLastPerson is the id (base 0) of the last person at or before
// event e: the current one when e is a person.
func nexmarkLastPerson(e int64) int64 {
	return e/nexmarkEpoch*nexmarkPersons + min(e%nexmarkEpoch, nexmarkPersons-1)
}

// nexmarkLastAuction is the id (base 0) of the last auction at or before
// event e (-1 before the first auction).
func nexmarkLastAuction(e int64) int64 {
	epoch, off := e/nexmarkEpoch, e%nexmarkEpoch
	switch {
	case off < nexmarkPersons:
		return epoch*nexmarkAuctions - 1
	case off >= nexmarkPersons+nexmarkAuctions:
		return epoch*nexmarkAuctions + nexmarkAuctions - 1
	}
	return epoch*nexmarkAuctions + off - nexmarkPersons
}

// nexmarkTime is event e's time in ms since the epoch.
func nexmarkTime(e int64) int64 {
	return NexmarkBaseTime + e/nexmarkEventsPerMs // e*1000 could overflow
}

// eventRand is the random stream of one event: splitmix64 from
// source.Mix(seed, e).
type eventRand struct{ s uint64 }

func newEventRand(seed, e int64) eventRand { return eventRand{s: source.Mix(seed, e, 0)} }

func (r *eventRand) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// intn is uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias is
// below 2^-40 for the small n used here).
func (r *eventRand) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

func (r *eventRand) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// price is a price in cents, log-uniform from 1.00 to 1 000 000.00.
func (r *eventRand) price() int64 {
	return int64(math.Round(math.Exp(r.float()*6*math.Ln10) * 100)) // 10^(6u), Exp being cheaper than Pow
}

// randomPerson is a person id (base 0) among the active persons before
// event e, or up to nexmarkIDLead ahead.
func (r *eventRand) randomPerson(e int64) int64 {
	persons := nexmarkLastPerson(e) + 1
	active := min(persons, nexmarkActivePersons)
	return persons - active + r.intn(active+nexmarkIDLead)
}

// randomAuction is an auction id (base 0) among the in-flight auctions
// before event e, or up to nexmarkIDLead ahead.
func (r *eventRand) randomAuction(e int64) int64 {
	last := nexmarkLastAuction(e)
	lo := max(last-nexmarkInFlight, 0)
	return lo + r.intn(last-lo+1+nexmarkIDLead)
}

// appendString appends 3 to maxLen-1 letters, about 1 in 13 a space, with
// the spaces at both ends trimmed.
func (r *eventRand) appendString(buf []byte, maxLen int64) []byte {
	start := len(buf)
	for n := nexmarkMinStringLength + r.intn(maxLen-nexmarkMinStringLength); n > 0; n-- {
		if r.intn(13) == 0 {
			buf = append(buf, ' ')
		} else {
			buf = append(buf, byte('a'+r.intn(26)))
		}
	}
	s := buf[start:]
	trimmed := strings.TrimSpace(string(s)) // short strings: names and descriptions
	return append(buf[:start], trimmed...)
}

// appendExtra appends letters so that an event of size bytes reaches about
// average bytes: between 80 % and 120 % of the difference.
func (r *eventRand) appendExtra(buf []byte, size, average int) []byte {
	if size > average {
		return buf
	}
	want := average - size
	delta := int(math.Round(float64(want) * 0.2))
	n := want - delta
	if delta > 0 {
		n += int(r.intn(int64(2 * delta)))
	}
	// 4 letters per random draw, one from each 16 bits (multiply-shift:
	// uniform within 26/65536), computed independently of each other.
	start := len(buf)
	buf = slices.Grow(buf, n)[:start+n]
	out := buf[start:]
	for len(out) >= 4 {
		v := r.next()
		out[0] = byte('a' + (v&0xFFFF)*26>>16)
		out[1] = byte('a' + (v>>16&0xFFFF)*26>>16)
		out[2] = byte('a' + (v>>32&0xFFFF)*26>>16)
		out[3] = byte('a' + (v>>48)*26>>16)
		out = out[4:]
	}
	v := r.next()
	for i := range out {
		out[i] = byte('a' + (v>>(16*i)&0xFFFF)*26>>16)
	}
	return buf
}

var (
	nexmarkFirstNames = []string{"Ada", "Boris", "Chen", "Dana", "Elif", "Femi", "Greta", "Hiro", "Ines", "Jonas", "Kofi"}
	nexmarkLastNames  = []string{"Adler", "Brandt", "Castro", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes", "Ivanova"}
	nexmarkCities     = []string{"Phoenix", "Tucson", "Fresno", "Oakland", "Boise", "Eugene", "Salem", "Tacoma", "Spokane", "Casper"}
	// Nexmark's states: its queries select persons of OR, ID and CA.
	nexmarkStates = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
)

// nexmarkReader returns the events of one kind among the events of the
// ranges it owns (the event numbers are split as bounded datagen rows are).
type nexmarkReader struct {
	cfg    connector.ReaderConfig
	kind   planpb.NexmarkSource_Kind
	seed   int64
	ranges *source.RowRanges
	pace   source.Pacer // events (of every kind) per second of this subtask
	buf    []byte
}

func openReader(src *planpb.NexmarkSource, cfg connector.ReaderConfig, restore map[string]connector.SplitState) (connector.Reader, error) {
	if err := Validate(src, cfg.Schema); err != nil {
		return nil, err
	}
	rs, err := source.SplitRows(src.GetEvents(), cfg, restore)
	if err != nil {
		return nil, err
	}
	g := &nexmarkReader{cfg: cfg, kind: src.GetKind(), seed: src.GetSeed(), ranges: rs}
	g.pace.Rate = src.GetEventsPerSecond() * float64(rs.Owned) / float64(src.GetEvents())
	g.pace.Left = rs.Left()
	return g, nil
}

// eventsFor is how many events from a hold at most BatchRows of the
// reader's kind.
func (g *nexmarkReader) eventsFor(a int64) int64 {
	rows := int64(g.cfg.BatchRows)
	_, per := nexmarkKindSlots(g.kind)
	n := rows / per * nexmarkEpoch // whole blocks of 50 hold exactly per each
	for nexmarkCountBefore(g.kind, a+n+1)-nexmarkCountBefore(g.kind, a) <= rows && n < rows*nexmarkEpoch {
		n++
	}
	return g.pace.Limit(max(n, 1))
}

func (g *nexmarkReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		a, b, last, ok := g.ranges.Peek(g.eventsFor)
		if !ok {
			return nil, io.EOF
		}
		if err := g.pace.Wait(ctx, b-a); err != nil {
			return nil, err
		}
		g.ranges.Commit(b, last)
		if nexmarkCountBefore(g.kind, b) == nexmarkCountBefore(g.kind, a) {
			continue // no event of the kind: a few events of another
		}
		return g.build(a, b), nil
	}
}

// build makes the batch of the reader's kind of events among [a, b).
func (g *nexmarkReader) build(a, b int64) arrow.RecordBatch {
	rb := array.NewRecordBuilder(g.cfg.Allocator, g.cfg.Schema)
	defer rb.Release()
	n := int(nexmarkCountBefore(g.kind, b) - nexmarkCountBefore(g.kind, a))
	for _, f := range rb.Fields() {
		f.Reserve(n)
	}
	// extra, the last column, holds most of the bytes: at most an event's
	// average size each, reserved at once rather than grown (and copied)
	// by doubling.
	avg := map[planpb.NexmarkSource_Kind]int{
		planpb.NexmarkSource_PERSON: nexmarkPersonBytes, planpb.NexmarkSource_AUCTION: nexmarkAuctionBytes, planpb.NexmarkSource_BID: nexmarkBidBytes,
	}[g.kind]
	rb.Field(len(rb.Fields()) - 1).(*array.StringBuilder).ReserveData(n * avg)
	first, count := nexmarkKindSlots(g.kind)
	for e := a; e < b; e++ {
		if off := e % nexmarkEpoch; off < first || off >= first+count {
			continue
		}
		r := newEventRand(g.seed, e)
		switch g.kind {
		case planpb.NexmarkSource_PERSON:
			g.person(rb, &r, e)
		case planpb.NexmarkSource_AUCTION:
			g.auction(rb, &r, e)
		default:
			g.bid(rb, &r, e)
		}
	}
	return rb.NewRecordBatch()
}

func appendStr(b array.Builder, v []byte) { b.(*array.StringBuilder).BinaryBuilder.Append(v) }

func appendInt(b array.Builder, v int64) { b.(*array.Int64Builder).UnsafeAppend(v) }

func appendTime(b array.Builder, ms int64) {
	b.(*array.TimestampBuilder).UnsafeAppend(arrow.Timestamp(ms))
}

func (g *nexmarkReader) person(rb *array.RecordBuilder, r *eventRand, e int64) {
	f := rb.Fields()
	appendInt(f[0], nexmarkLastPerson(e)+NexmarkFirstID)
	size := 8
	text := func(col int, fill func(buf []byte) []byte) {
		g.buf = fill(g.buf[:0])
		size += len(g.buf)
		appendStr(f[col], g.buf)
	}
	text(1, func(buf []byte) []byte {
		buf = append(buf, nexmarkFirstNames[r.intn(int64(len(nexmarkFirstNames)))]...)
		buf = append(buf, ' ')
		return append(buf, nexmarkLastNames[r.intn(int64(len(nexmarkLastNames)))]...)
	})
	text(2, func(buf []byte) []byte {
		buf = append(r.appendString(buf, 7), '@')
		return append(r.appendString(buf, 5), ".com"...)
	})
	text(3, func(buf []byte) []byte {
		for i := range 4 {
			if i > 0 {
				buf = append(buf, ' ')
			}
			buf = fmt.Appendf(buf, "%04d", r.intn(10000))
		}
		return buf
	})
	text(4, func(buf []byte) []byte { return append(buf, nexmarkCities[r.intn(int64(len(nexmarkCities)))]...) })
	text(5, func(buf []byte) []byte { return append(buf, nexmarkStates[r.intn(int64(len(nexmarkStates)))]...) })
	appendTime(f[6], nexmarkTime(e))
	g.buf = r.appendExtra(g.buf[:0], size, nexmarkPersonBytes)
	appendStr(f[7], g.buf)
}

func (g *nexmarkReader) auction(rb *array.RecordBuilder, r *eventRand, e int64) {
	f := rb.Fields()
	ts := nexmarkTime(e)
	appendInt(f[0], nexmarkLastAuction(e)+NexmarkFirstID)
	g.buf = r.appendString(g.buf[:0], 20)
	size := 8 + len(g.buf)
	appendStr(f[1], g.buf)
	g.buf = r.appendString(g.buf[:0], 100)
	size += len(g.buf) + 5*8
	appendStr(f[2], g.buf)
	initial := r.price()
	appendInt(f[3], initial)
	appendInt(f[4], initial+r.price())
	appendTime(f[5], ts)
	// Auctions last twice, on average, the event time until
	// nexmarkInFlight more auctions are made.
	horizon := nexmarkTime(e+nexmarkInFlight*nexmarkEpoch/nexmarkAuctions) - ts
	appendTime(f[6], ts+1+r.intn(max(2*horizon, 1)))
	var seller int64
	if r.intn(nexmarkHotSellerOdds) > 0 {
		seller = nexmarkLastPerson(e) / nexmarkHotBlock * nexmarkHotBlock
	} else {
		seller = r.randomPerson(e)
	}
	appendInt(f[7], seller+NexmarkFirstID)
	appendInt(f[8], NexmarkFirstCategory+r.intn(nexmarkCategories))
	g.buf = r.appendExtra(g.buf[:0], size, nexmarkAuctionBytes)
	appendStr(f[9], g.buf)
}

func (g *nexmarkReader) bid(rb *array.RecordBuilder, r *eventRand, e int64) {
	f := rb.Fields()
	var auction int64
	if r.intn(nexmarkHotAuctionOdds) > 0 {
		auction = nexmarkLastAuction(e) / nexmarkHotBlock * nexmarkHotBlock
	} else {
		auction = r.randomAuction(e)
	}
	appendInt(f[0], auction+NexmarkFirstID)
	var bidder int64
	if r.intn(nexmarkHotBidderOdds) > 0 {
		// The second of the block, so that hot bidders are not hot sellers.
		bidder = nexmarkLastPerson(e)/nexmarkHotBlock*nexmarkHotBlock + 1
	} else {
		bidder = r.randomPerson(e)
	}
	appendInt(f[1], bidder+NexmarkFirstID)
	appendInt(f[2], r.price())
	appendTime(f[3], nexmarkTime(e))
	g.buf = r.appendExtra(g.buf[:0], 4*8, nexmarkBidBytes)
	appendStr(f[4], g.buf)
}

func (g *nexmarkReader) Snapshot() ([]connector.SplitState, error) { return g.ranges.Snapshot(), nil }

func (g *nexmarkReader) Close() error { return nil }

// PendingRecords are the events of the reader's kind among those due by
// the event rate that Next has not generated yet: the events of every kind
// behind schedule times the kind's share of an epoch (1, 3 or 46 of 50),
// so within one epoch of the exact count (connector.Backlog).
func (g *nexmarkReader) PendingRecords() int64 {
	_, count := nexmarkKindSlots(g.kind)
	return g.pace.Pending() * count / nexmarkEpoch
}

// ThrottledTime is the time the reader slept for its event rate
// (connector.Throttled).
func (g *nexmarkReader) ThrottledTime() time.Duration { return g.pace.Waited }

var (
	_ connector.Backlog   = (*nexmarkReader)(nil)
	_ connector.Throttled = (*nexmarkReader)(nil)
)
