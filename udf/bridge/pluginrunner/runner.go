package pluginrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Runner is a bridge.Runner backed by one Python worker process.
type Runner struct {
	opts     Options
	label    string
	udfNames string
	log      *slog.Logger
	// pid is the worker's process id once started; the worker's log
	// records carry it.
	pid atomic.Int64
	// exitLogged makes an unexpected worker exit logged once.
	exitLogged   atomic.Bool
	inputSchema  []byte
	outputSchema *arrow.Schema
	// batchMap is set for a map_batches function: results may have any
	// number of rows.
	batchMap bool
	// aggregate is set for a chain of pandas aggregate functions: a
	// result has one row per group of its batch (bridge.GroupCount).
	aggregate bool
	// schemaOmittable: batches in shared memory go without their schema
	// (it has no dictionary field).
	schemaOmittable bool
	openReq         *workerpb.OpenRequest

	// lifeCtx ends when the runner is canceled; the stream derives from it.
	lifeCtx    context.Context
	lifeCancel context.CancelFunc

	// window holds one token per batch awaiting its result.
	window chan struct{}
	// failed is closed with the first failure, Close or Cancel.
	failed chan struct{}
	// wake tells the one TakeResult caller that the queue changed.
	wake chan struct{}

	// Set by Open, read-only afterwards.
	proc         *pluginProcess
	stream       batchStream
	streamCancel context.CancelFunc
	receiverDone chan struct{}

	// sendMu serializes Send on the stream: Process runs on the task
	// goroutine, Flush on the flush executor.
	sendMu  sync.Mutex
	sendBuf bytes.Buffer
	// nextSlot is the shared-memory slot of the next batch (task
	// goroutine only).
	nextSlot int
	// retainedLogged makes a UDF that keeps its input logged once.
	retainedLogged atomic.Bool
	// sharedIn and sharedOut count the batches and results that went
	// through the shared region (tests check the transport is used).
	sharedIn, sharedOut atomic.Int64
	// lastAnswer is when the previous result came (receiver goroutine
	// only): the worker answers in order, so a batch's time at the worker
	// starts at its send or at the previous answer, whichever is later.
	lastAnswer time.Time

	mu struct {
		sync.Mutex
		opened  bool
		closing bool
		err     error
		queue   []queued
		pending []pendingBatch
		// shared is the region of TransportSharedMemory once the stream
		// is open; Close and Cancel unmap it once nothing touches it.
		shared  *sharedRegion
		bundles map[int64]chan struct{}
		nextID  int64
	}

	closeOnce  sync.Once
	closeErr   error
	cancelOnce sync.Once
	// procMu serializes process teardown between Close and Cancel.
	procMu sync.Mutex
}

var (
	_ bridge.Runner   = (*Runner)(nil)
	_ bridge.Canceler = (*Runner)(nil)
)

type queued struct {
	res bridge.Result
	// wake marks the entry NotifyNoMoreResults leaves.
	wake bool
}

type pendingBatch struct {
	seq  int64
	rows int64
	sent time.Time
	// slot is the batch's shared-memory slot (TransportSharedMemory).
	slot int
}

// NewRunner checks opts and prepares a runner; Open starts the worker.
func NewRunner(opts Options) (*Runner, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	names := make([]string, len(opts.Calls))
	for i, c := range opts.Calls {
		names[i] = c.GetUdf().GetName()
	}
	label := fmt.Sprintf("udf %q", strings.Join(names, "+"))
	if opts.OperatorName != "" {
		label += fmt.Sprintf(" (operator %s, subtask %d)", opts.OperatorName, opts.Subtask)
	}
	out := opts.OutputSchema
	if out == nil {
		var err error
		if out, err = defaultOutputSchema(opts.Calls); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
	}
	in, err := arrowipc.EncodeSchema(opts.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%s: input schema: %w", label, err)
	}
	outBytes, err := arrowipc.EncodeSchema(out)
	if err != nil {
		return nil, fmt.Errorf("%s: output schema: %w", label, err)
	}
	r := &Runner{
		opts:         opts,
		label:        label,
		udfNames:     strings.Join(names, "+"),
		log:          opts.Logger.With("udf", strings.Join(names, "+"), "operator", opts.OperatorName, "subtask", opts.Subtask),
		inputSchema:  in,
		outputSchema: out,
		window:       make(chan struct{}, opts.MaxInFlight),
		failed:       make(chan struct{}),
		wake:         make(chan struct{}, 1),
	}
	r.openReq = &workerpb.OpenRequest{
		Calls:               opts.Calls,
		InputSchema:         in,
		OutputSchema:        outBytes,
		MaxMessageBytes:     int64(opts.MaxMessageBytes),
		AsyncTimeoutSeconds: opts.AsyncTimeout.Seconds(),
		OperatorName:        opts.OperatorName,
		Subtask:             int32(opts.Subtask),
		Transport:           workerpb.Transport_TRANSPORT_GRPC_STREAM,
	}
	switch opts.Transport {
	case TransportUnixSocket:
		r.openReq.Transport = workerpb.Transport_TRANSPORT_UNIX_SOCKET
	case TransportSharedMemory:
		r.openReq.Transport = workerpb.Transport_TRANSPORT_SHARED_MEMORY
		r.openReq.SharedSlotBytes = opts.SharedSlotBytes
		r.openReq.SharedSlots = int32(opts.MaxInFlight)
	}
	r.batchMap = isBatchMap(opts.Calls)
	r.aggregate = len(opts.Calls) > 0 && opts.Calls[0].GetUdf().GetFuncType() == workerpb.FuncType_FUNC_TYPE_PANDAS_AGGREGATE
	r.schemaOmittable = !hasDictionary(opts.InputSchema.Fields())
	r.lifeCtx, r.lifeCancel = context.WithCancel(context.Background())
	r.mu.bundles = make(map[int64]chan struct{})
	return r, nil
}

func isBatchMap(calls []*workerpb.UdfCall) bool {
	return len(calls) == 1 && calls[0].GetUdf().GetFuncType() == workerpb.FuncType_FUNC_TYPE_PANDAS_BATCH
}

// defaultOutputSchema has one column per call: its output name and its
// UDF's declared return type; a map_batches function declares the whole
// schema.
func defaultOutputSchema(calls []*workerpb.UdfCall) (*arrow.Schema, error) {
	if isBatchMap(calls) {
		rs, err := arrowipc.DecodeSchema(calls[0].GetUdf().GetReturnSchema())
		if err != nil {
			return nil, fmt.Errorf("map_batches %q: return_schema is not an Arrow schema", calls[0].GetUdf().GetName())
		}
		return rs, nil
	}
	fields := make([]arrow.Field, len(calls))
	for i, c := range calls {
		rs, err := arrowipc.DecodeSchema(c.GetUdf().GetReturnSchema())
		if err != nil || rs.NumFields() != 1 {
			return nil, fmt.Errorf("udf %q: return_schema is not an Arrow schema with one field", c.GetUdf().GetName())
		}
		fields[i] = arrow.Field{Name: c.GetOutput(), Type: rs.Field(0).Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// OutputSchema is the schema of every result batch.
func (r *Runner) OutputSchema() *arrow.Schema { return r.outputSchema }

// Pid is the worker's process id, 0 before Open.
func (r *Runner) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.Pid()
}

// Open starts the worker and opens the chain. On failure nothing is left
// running. Blocks until ready, StartTimeout, ctx's end or Cancel.
func (r *Runner) Open(ctx context.Context) error {
	r.mu.Lock()
	if r.mu.opened || r.mu.closing {
		r.mu.Unlock()
		return fmt.Errorf("%s: Open called twice or after close: %w", r.label, bridge.ErrClosed)
	}
	r.mu.opened = true
	r.mu.Unlock()

	openCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(r.lifeCtx, func() { cancel(bridge.ErrClosed) })
	defer stop()

	proc, resp, err := r.openWorker(openCtx, true)
	if err != nil {
		return err
	}
	r.log.Debug("worker ready", "pid", resp.GetPid(), "python", resp.GetPythonVersion(), "pyarrow", resp.GetPyarrowVersion())

	stream, streamCancel, shared, err := r.openStream(openCtx, resp)
	if err == nil && shared != nil {
		r.mu.Lock()
		closing := r.mu.closing
		if !closing {
			r.mu.shared = shared
		}
		r.mu.Unlock()
		if closing {
			streamCancel()
			_ = shared.unmap()
			err = fmt.Errorf("%s: canceled while opening: %w", r.label, bridge.ErrClosed)
			r.failOpen(proc, err)
			return err
		}
	}
	if err != nil {
		if openCtx.Err() != nil {
			// The open was canceled (the job failed or was canceled): the
			// worker is not lost, it is being stopped.
			err = fmt.Errorf("canceled: %w", context.Cause(openCtx))
		} else if !errors.Is(err, errNoDataSocket) {
			// The worker's fate says more than the dial error.
			err = r.lostError(err)
		}
		err = fmt.Errorf("%s: open %s stream: %w", r.label, r.opts.Transport, err)
		r.failOpen(proc, err)
		return err
	}
	r.stream, r.streamCancel = stream, streamCancel
	r.receiverDone = make(chan struct{})
	go r.receive()
	r.opts.Metrics.WorkerOpened(proc.Pid())
	return nil
}

// openWorker takes an idle worker from the pool (when reuse allows) or
// starts one, and opens the chain on it. A warm worker that turns out to
// be gone is replaced by a new one; nothing is left running on failure.
func (r *Runner) openWorker(ctx context.Context, reuse bool) (*pluginProcess, *workerpb.OpenResponse, error) {
	var proc *pluginProcess
	if reuse && r.opts.Pool != nil {
		proc, _ = r.opts.Pool.take(envKey(r.opts)).(*pluginProcess)
	}
	reused := proc != nil
	if reused {
		proc.logTo.Store(r.log)
		proc.prefix.Store(ptr(outputPrefix(r.opts.udfNames(), r.opts.Subtask)))
		proc.stderr.reset()
		r.pid.Store(int64(proc.Pid()))
		r.log.Debug("idle worker reused", "pid", proc.Pid(), "python", r.opts.Python)
	} else {
		logger, logTo := newSwapLogger(r.log)
		var err error
		proc, err = startProcess(ctx, r.opts, logger, &r.pid)
		if err != nil {
			r.markClosed(err)
			return nil, nil, fmt.Errorf("%s: %w", r.label, err)
		}
		proc.logTo = logTo
		r.log.Debug("worker started", "pid", proc.Pid(), "python", r.opts.Python)
	}
	r.mu.Lock()
	if r.mu.closing {
		r.mu.Unlock()
		proc.Stop(r.opts.CancelGrace)
		return nil, nil, fmt.Errorf("%s: canceled while opening: %w", r.label, bridge.ErrClosed)
	}
	r.proc = proc
	r.mu.Unlock()

	resp, err := proc.conn.Open(ctx, r.openReq)
	if err == nil {
		proc.setWorkerPid(int(resp.GetPid()))
		r.pid.Store(int64(proc.Pid()))
	}
	if err != nil && reused && ctx.Err() == nil {
		// The idle worker died (killed from outside) since its last job.
		r.log.Debug("idle worker lost, starting a new one", "pid", proc.Pid(), "cause", err)
		r.mu.Lock()
		r.proc = nil
		r.mu.Unlock()
		proc.Stop(r.opts.CancelGrace)
		return r.openWorker(ctx, false)
	}
	switch {
	case err == nil && resp.GetError() != nil:
		err = r.udfError(resp.GetError())
	case err != nil && ctx.Err() != nil:
		// The open was canceled (the job failed or was canceled): the
		// worker is not lost, it is being stopped, and says so in no log.
		err = fmt.Errorf("%s: open canceled: %w", r.label, context.Cause(ctx))
	case err != nil:
		err = fmt.Errorf("%s: open: %w", r.label, r.lostError(err))
	}
	if err != nil {
		r.failOpen(proc, err)
		return nil, nil, err
	}
	return proc, resp, nil
}

// errNoDataSocket is a worker that ignored TRANSPORT_UNIX_SOCKET: it is
// alive and well, so it is named as it is, not as a lost worker.
var errNoDataSocket = errors.New("the worker opened no data socket (is its flinkgo package older than the host?)")

// openStream connects the batch stream, and with TransportSharedMemory
// creates the shared region and hands it to the worker. Its cancel func
// aborts the stream: Recv returns at once.
func (r *Runner) openStream(ctx context.Context, resp *workerpb.OpenResponse) (batchStream, context.CancelFunc, *sharedRegion, error) {
	if r.opts.Transport == TransportUnixSocket || r.opts.Transport == TransportSharedMemory {
		if resp.GetDataSocket() == "" {
			return nil, nil, nil, errNoDataSocket
		}
		s, err := dialSocketStream(ctx, resp.GetDataSocket(), r.opts.MaxMessageBytes)
		if err != nil {
			return nil, nil, nil, err
		}
		var shared *sharedRegion
		if r.opts.Transport == TransportSharedMemory {
			if shared, err = r.shareRegion(s); err != nil {
				s.abort()
				return nil, nil, nil, err
			}
		}
		stop := context.AfterFunc(r.lifeCtx, s.abort)
		return s, func() { stop(); s.abort() }, shared, nil
	}
	streamCtx, cancel := context.WithCancel(r.lifeCtx)
	stream, err := r.proc.conn.Process(streamCtx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return stream, cancel, nil, nil
}

// shareRegion creates the shared region and sends it on the data socket.
// Where no region can be made (a sandbox without memfd_create, a memory
// limit) it sends the byte alone: the worker then takes every payload
// inline, as with TransportUnixSocket, and the region is nil.
func (r *Runner) shareRegion(s *socketStream) (*sharedRegion, error) {
	region, fd, err := newSharedRegion(r.opts.MaxInFlight, r.opts.SharedSlotBytes)
	if err != nil {
		r.log.Warn("no shared memory for the UDF batches; they travel on the socket", "error", err)
		if _, err := s.conn.Write([]byte{0}); err != nil {
			return nil, fmt.Errorf("shared-memory transport: %w", err)
		}
		return nil, nil
	}
	if err := sendRegion(s.conn, fd); err != nil {
		_ = region.unmap()
		return nil, fmt.Errorf("shared-memory transport: hand the region to the worker: %w", err)
	}
	return region, nil
}

// unmapShared releases the host's mapping of the shared region once neither
// Process nor the receiver can touch it.
func (r *Runner) unmapShared() {
	r.mu.Lock()
	shared := r.mu.shared
	r.mu.Unlock()
	if shared != nil {
		if err := shared.unmap(); err != nil {
			r.log.Warn("could not unmap the shared-memory region", "error", err)
		}
	}
}

func (r *Runner) failOpen(proc *pluginProcess, err error) {
	r.markClosed(err)
	r.procMu.Lock()
	defer r.procMu.Unlock()
	proc.Stop(r.opts.CancelGrace)
}

// markClosed records err and refuses further work.
func (r *Runner) markClosed(err error) {
	r.mu.Lock()
	r.mu.closing = true
	r.failLocked(err)
	r.mu.Unlock()
}

// Process sends one batch; see bridge.Runner. When ctx ends while the send
// blocks, the stream is aborted and the runner fails.
func (r *Runner) Process(ctx context.Context, seq int64, batch arrow.RecordBatch) error {
	if err := r.usable(); err != nil {
		return err
	}
	select {
	case r.window <- struct{}{}:
	case <-r.failed:
		return r.failure()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	rows := batch.NumRows()
	if r.aggregate {
		// One result row per group.
		groups, err := bridge.GroupCount(batch)
		if err != nil {
			<-r.window
			return fmt.Errorf("%s: batch %d: %w", r.label, seq, err)
		}
		rows = groups
	}
	slot := r.nextSlot
	r.nextSlot = (r.nextSlot + 1) % r.opts.MaxInFlight
	r.mu.Lock()
	r.mu.pending = append(r.mu.pending, pendingBatch{seq: seq, rows: rows, slot: slot, sent: time.Now()})
	if r.mu.err == nil { // after a failure failLocked counted the pending out
		r.opts.Metrics.AddInFlight(1)
	}
	shared := r.mu.shared
	r.mu.Unlock()

	r.sendMu.Lock()
	msg := &workerpb.Batch{Seq: seq, Slot: int32(slot)}
	var err error
	inShared := false
	if shared != nil {
		msg.SchemaOmitted = r.schemaOmittable && sameLayout(batch.Schema(), r.opts.InputSchema)
		msg.SharedLength, inShared, err = shared.writeInput(slot, batch, r.opts.Allocator, msg.SchemaOmitted)
		if inShared {
			r.sharedIn.Add(1)
		}
	}
	inline := !inShared && err == nil
	if inline {
		msg.SchemaOmitted = false
		err = arrowipc.EncodeBatch(&r.sendBuf, batch, r.opts.Allocator)
		msg.ArrowIpc = r.sendBuf.Bytes()
	}
	if err == nil && inline && r.sendBuf.Len() > r.opts.MaxMessageBytes-4096 {
		err = fmt.Errorf("batch %d is %d bytes as Arrow IPC, over the %d-byte message limit; cut batches below %d bytes",
			seq, r.sendBuf.Len(), r.opts.MaxMessageBytes, r.opts.MaxBatchBytes())
	}
	if err != nil {
		r.sendMu.Unlock()
		r.fail(fmt.Errorf("%s: %w", r.label, err))
		return r.failure()
	}
	// A send blocks while the worker does not read (a hung UDF fills the
	// socket); when ctx ends meanwhile the stream is aborted, which fails
	// the runner: the caller is canceling.
	stop := context.AfterFunc(ctx, func() {
		r.fail(fmt.Errorf("%s: send aborted: %w", r.label, context.Cause(ctx)))
		r.streamCancel()
	})
	err = r.stream.Send(&workerpb.ProcessRequest{Kind: &workerpb.ProcessRequest_Batch{Batch: msg}})
	stop()
	r.sendMu.Unlock()
	if err != nil {
		return r.sendFailed(err)
	}
	r.opts.Metrics.AddBatch(batch.NumRows())
	return nil
}

// Flush ends the bundle; see bridge.Runner.
func (r *Runner) Flush() error {
	if err := r.usable(); err != nil {
		return err
	}
	r.mu.Lock()
	id := r.mu.nextID
	r.mu.nextID++
	done := make(chan struct{})
	r.mu.bundles[id] = done
	r.mu.Unlock()

	r.sendMu.Lock()
	err := r.stream.Send(&workerpb.ProcessRequest{Kind: &workerpb.ProcessRequest_EndBundle{
		EndBundle: &workerpb.EndBundle{BundleId: id},
	}})
	r.sendMu.Unlock()
	if err != nil {
		return r.sendFailed(err)
	}
	// A failure also closes done; either way the runner's error decides.
	select {
	case <-done:
	case <-r.failed:
	}
	return r.failure()
}

// TakeResult blocks for the next result; see bridge.Runner.
func (r *Runner) TakeResult(ctx context.Context) (bridge.Result, error) {
	for {
		r.mu.Lock()
		if len(r.mu.queue) > 0 {
			q := r.mu.queue[0]
			r.mu.queue = r.mu.queue[1:]
			r.mu.Unlock()
			if q.wake {
				return bridge.Result{}, bridge.ErrNoMoreResults
			}
			return q.res, nil
		}
		err := r.mu.err
		r.mu.Unlock()
		if err != nil {
			return bridge.Result{}, err
		}
		select {
		case <-r.wake:
		case <-r.failed:
		case <-ctx.Done():
			return bridge.Result{}, context.Cause(ctx)
		}
	}
}

// TryTakeResult returns a queued result without blocking; wake-ups left by
// NotifyNoMoreResults are skipped.
func (r *Runner) TryTakeResult() (bridge.Result, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.mu.queue) > 0 {
		q := r.mu.queue[0]
		r.mu.queue = r.mu.queue[1:]
		if !q.wake {
			return q.res, true, nil
		}
	}
	return bridge.Result{}, false, r.mu.err
}

// NotifyNoMoreResults wakes one TakeResult with ErrNoMoreResults.
func (r *Runner) NotifyNoMoreResults() {
	r.mu.Lock()
	r.mu.queue = append(r.mu.queue, queued{wake: true})
	r.mu.Unlock()
	r.signal()
}

// Close ends the chain in order: the worker answers what it was sent, runs
// UDF teardown and exits. It blocks until the worker is gone, at most
// CloseTimeout before it falls back to Cancel. Idempotent: a second caller
// waits for the first and gets its result. After Cancel, Close does nothing.
func (r *Runner) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *Runner) close() error {
	r.mu.Lock()
	if r.mu.closing && r.proc == nil {
		// Never opened, or Open failed and cleaned up.
		r.mu.Unlock()
		return nil
	}
	canceled := r.lifeCtx.Err() != nil
	broken := r.mu.err
	r.mu.closing = true
	proc := r.proc
	r.mu.Unlock()
	if proc != nil {
		r.opts.Metrics.WorkerGone(proc.Pid())
	}
	if canceled {
		return nil
	}
	defer r.releaseQueued()

	var errs []error
	ctx, cancel := context.WithTimeout(r.lifeCtx, r.opts.CloseTimeout)
	defer cancel()
	if r.stream != nil && broken == nil {
		// Half-close: the worker answers what it has, then ends the stream.
		r.sendMu.Lock()
		_ = r.stream.CloseSend()
		r.sendMu.Unlock()
		select {
		case <-r.receiverDone:
		case <-ctx.Done():
			r.Cancel()
			return fmt.Errorf("%s: worker did not finish within %s; it was killed", r.label, r.opts.CloseTimeout)
		}
		if resp, err := r.proc.conn.Close(ctx, &workerpb.CloseRequest{}); err != nil {
			errs = append(errs, fmt.Errorf("%s: close: %w", r.label, r.lostError(err)))
		} else if resp.GetError() != nil {
			errs = append(errs, r.udfError(resp.GetError()))
		}
	}
	if r.streamCancel != nil {
		r.streamCancel()
		<-r.receiverDone
	}
	r.unmapShared()
	// A worker that answered everything and closed its chain without an
	// error may serve a later runner; it leaves this one under r.mu, so
	// that a Cancel racing with this Close can no longer reach it.
	var keep *pluginProcess
	r.mu.Lock()
	if r.opts.Pool != nil && len(errs) == 0 && r.mu.err == nil {
		keep, r.proc = r.proc, nil
	}
	r.failLocked(fmt.Errorf("%s: %w", r.label, bridge.ErrClosed))
	r.mu.Unlock()
	if keep != nil {
		if r.opts.Pool.put(envKey(r.opts), keep, r.opts.IdleTimeout, r.opts.MaxIdle) {
			r.log.Debug("worker kept idle for reuse", "pid", keep.Pid(), "idle_timeout", r.opts.IdleTimeout)
		} else {
			keep.Shutdown()
		}
	}
	r.procMu.Lock()
	if r.proc != nil {
		r.proc.Shutdown()
	}
	r.procMu.Unlock()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}

// Cancel aborts the stream, fails every waiter and stops the worker:
// SIGTERM, SIGKILL after CancelGrace. It never waits on the worker's
// cooperation. Safe from any goroutine, any number of times.
func (r *Runner) Cancel() {
	r.cancelOnce.Do(func() {
		r.mu.Lock()
		r.mu.closing = true
		r.failLocked(fmt.Errorf("%s: %w", r.label, bridge.ErrClosed))
		proc := r.proc
		r.mu.Unlock()
		r.lifeCancel()
		if proc != nil {
			r.opts.Metrics.WorkerGone(proc.Pid())
			r.procMu.Lock()
			proc.Stop(r.opts.CancelGrace)
			r.procMu.Unlock()
		}
		if r.receiverDone != nil {
			<-r.receiverDone
		}
		r.unmapShared()
		r.releaseQueued()
	})
}

// receive reads the worker's answers until the stream ends.
func (r *Runner) receive() {
	defer close(r.receiverDone)
	// The receiver decodes what a worker sent: a panic on it fails this
	// runner's job, never the process.
	defer func() {
		if p := recover(); p != nil {
			r.fail(fmt.Errorf("%s: internal error receiving results (a bug in flinkgo, please report it with this trace): panic: %v\n%s", r.label, p, debug.Stack()))
		}
	}()
	for {
		resp, err := r.stream.Recv()
		if err != nil {
			r.streamEnded(err)
			return
		}
		switch kind := resp.GetKind().(type) {
		case *workerpb.ProcessResponse_Result:
			if err := r.accept(kind.Result); err != nil {
				r.fail(fmt.Errorf("%s: %w", r.label, err))
			}
		case *workerpb.ProcessResponse_BundleDone:
			r.mu.Lock()
			done, ok := r.mu.bundles[kind.BundleDone.GetBundleId()]
			delete(r.mu.bundles, kind.BundleDone.GetBundleId())
			r.mu.Unlock()
			if ok {
				close(done)
			}
		case *workerpb.ProcessResponse_Error:
			r.fail(r.udfError(kind.Error))
		}
	}
}

// accept checks one result against the batch it answers and queues it.
func (r *Runner) accept(res *workerpb.BatchResult) error {
	r.mu.Lock()
	if len(r.mu.pending) == 0 {
		r.mu.Unlock()
		return fmt.Errorf("%w: result for batch %d, but no batch is pending", bridge.ErrResultMismatch, res.GetSeq())
	}
	want := r.mu.pending[0]
	r.mu.pending = r.mu.pending[1:]
	if r.mu.err == nil {
		r.opts.Metrics.AddInFlight(-1)
	}
	shared := r.mu.shared
	r.mu.Unlock()
	now := time.Now()
	if want.sent.After(r.lastAnswer) {
		r.lastAnswer = want.sent
	}
	r.opts.Metrics.AddAnswered(now.Sub(r.lastAnswer))
	r.lastAnswer = now
	data := res.GetArrowIpc()
	if shared != nil {
		if res.GetInputRetained() {
			// The UDF still views the slot's memory: writing it again would
			// change data the UDF holds.
			shared.retained[want.slot].Store(true)
			if r.retainedLogged.CompareAndSwap(false, true) {
				r.log.Info("a UDF keeps references to its input batches beyond its call; their shared-memory slots are not reused and those batches travel on the socket", "slot", want.slot)
			}
		}
		if n := res.GetSharedLength(); n > 0 {
			var err error
			if data, err = shared.readOutput(want.slot, n); err != nil {
				return fmt.Errorf("%w: result of batch %d: %v", bridge.ErrResultMismatch, res.GetSeq(), err)
			}
			r.sharedOut.Add(1)
		}
	}
	batch, err := arrowipc.DecodeBatch(data, r.opts.Allocator)
	if err != nil {
		return fmt.Errorf("%w: result of batch %d is not a valid Arrow IPC stream: %v", bridge.ErrResultMismatch, res.GetSeq(), err)
	}
	if err := r.checkResult(want, res.GetSeq(), batch); err != nil {
		batch.Release()
		return err
	}
	r.mu.Lock()
	r.mu.queue = append(r.mu.queue, queued{res: bridge.Result{Seq: want.seq, Batch: batch}})
	r.mu.Unlock()
	<-r.window
	r.signal()
	return nil
}

func (r *Runner) checkResult(want pendingBatch, seq int64, batch arrow.RecordBatch) error {
	if seq != want.seq {
		return fmt.Errorf("%w: got the result of batch %d while batch %d was next", bridge.ErrResultMismatch, seq, want.seq)
	}
	if batch.NumRows() != want.rows && !r.batchMap {
		return fmt.Errorf("%w: batch %d had %d rows but its result has %d", bridge.ErrResultMismatch, seq, want.rows, batch.NumRows())
	}
	out := r.outputSchema
	if int(batch.NumCols()) != out.NumFields() {
		return fmt.Errorf("%w: batch %d: result has %d columns, want %d (%s)", bridge.ErrResultMismatch, seq, batch.NumCols(), out.NumFields(), out)
	}
	for i, f := range out.Fields() {
		if got := batch.Column(i).DataType(); !arrow.TypeEqual(got, f.Type) {
			return fmt.Errorf("%w: batch %d: column %q is %s, declared %s", bridge.ErrResultMismatch, seq, f.Name, got, f.Type)
		}
	}
	return nil
}

// streamEnded turns the end of the stream into the runner's failure.
func (r *Runner) streamEnded(err error) {
	r.mu.Lock()
	closing, failed := r.mu.closing, r.mu.err != nil
	r.mu.Unlock()
	if failed {
		// The worker reported a UDF's exception (or sent a bad result) and
		// ended its stream: the end is the failure's consequence, and the
		// first failure stands.
		return
	}
	if closing {
		if !errors.Is(err, io.EOF) {
			r.fail(fmt.Errorf("%s: %w", r.label, bridge.ErrClosed))
		}
		return
	}
	r.fail(fmt.Errorf("%s: %w", r.label, r.lostError(err)))
}

// lostError describes a broken connection by the worker's fate.
func (r *Runner) lostError(cause error) error {
	if r.proc == nil {
		return fmt.Errorf("%w: %v", bridge.ErrWorkerLost, cause)
	}
	// The stream usually breaks a moment before the process is reaped.
	exited := r.proc.waitExited(time.Second)
	if r.exitLogged.CompareAndSwap(false, true) {
		if exited {
			r.log.Warn("worker exited unexpectedly", "pid", r.proc.Pid(), "status", r.proc.ExitStatus(), "likely_cause", r.proc.ExitCause(), "cause", cause)
		} else {
			r.log.Warn("lost the connection to the worker", "pid", r.proc.Pid(), "cause", cause)
		}
	}
	return &bridge.WorkerExitError{
		UDF:        r.udfNames,
		Operator:   r.opts.OperatorName,
		Subtask:    r.opts.Subtask,
		Pid:        r.proc.Pid(),
		Status:     r.proc.ExitStatus(),
		Cause:      r.proc.ExitCause(),
		StderrTail: r.proc.StderrTail(),
	}
}

// sendFailed returns the runner's failure once the receiver has seen why the
// stream broke (Send itself only reports io.EOF).
func (r *Runner) sendFailed(err error) error {
	select {
	case <-r.failed:
	case <-time.After(r.opts.CancelGrace + 2*time.Second):
		r.fail(fmt.Errorf("%s: send: %w", r.label, r.lostError(err)))
	}
	return r.failure()
}

func (r *Runner) usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.err != nil {
		return r.mu.err
	}
	if r.mu.closing || !r.mu.opened || r.stream == nil {
		return fmt.Errorf("%s: runner is not open: %w", r.label, bridge.ErrClosed)
	}
	return nil
}

func (r *Runner) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.err
}

func (r *Runner) fail(err error) {
	r.mu.Lock()
	r.failLocked(err)
	r.mu.Unlock()
}

// failLocked records the first failure and wakes every waiter: Process
// waiting for a window slot, Flush waiting for its bundle, TakeResult.
func (r *Runner) failLocked(err error) {
	if r.mu.err != nil {
		return
	}
	r.mu.err = err
	close(r.failed)
	// No pending batch will be answered (several runners of a subtask
	// share the count).
	r.opts.Metrics.AddInFlight(-int64(len(r.mu.pending)))
	for id, done := range r.mu.bundles {
		close(done)
		delete(r.mu.bundles, id)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// releaseQueued frees results nobody will take.
func (r *Runner) releaseQueued() {
	r.mu.Lock()
	q := r.mu.queue
	r.mu.queue = nil
	r.mu.Unlock()
	for _, e := range q {
		if e.res.Batch != nil {
			e.res.Batch.Release()
		}
	}
}

// udfError is the worker's report of a Python exception; it names the UDF
// and operator itself, so it is not wrapped with the runner's label.
func (r *Runner) udfError(e *workerpb.UdfError) *bridge.UDFError {
	return &bridge.UDFError{
		UDF:       e.GetUdfName(),
		Operator:  r.opts.OperatorName,
		Subtask:   r.opts.Subtask,
		Seq:       e.GetSeq(),
		Type:      e.GetExceptionType(),
		Message:   e.GetMessage(),
		Traceback: e.GetTraceback(),
	}
}
