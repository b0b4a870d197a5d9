package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// KeepaliveMinTime is the shortest interval between a client's keepalive
// pings the server accepts (gRPC's default is 5 minutes and answers faster
// pings with GOAWAY "too_many_pings"). The Python client pings every 10 s
// during a call, so that it notices a runtime that stopped answering (a
// SIGSTOPped or wedged process keeps its socket open) instead of waiting
// forever.
const KeepaliveMinTime = 5 * time.Second

// DefaultMaxMessageBytes is the default limit of one job-service message
// (`flinkgo serve --max-message-size`): a plan with its pickled UDFs and
// small inline tables fits many times over; large inline data belongs in
// files (Parquet, CSV), which the runtime reads without holding them in a
// message. The limit also bounds what one request can make the server hold.
const DefaultMaxMessageBytes = 64 << 20

// Guard returns the server options that keep one call from taking the
// server down: a panic in a handler becomes that call's INTERNAL error
// (logged with its stack), and a request over maxMessage bytes is refused
// before it is read. gRPC itself answers that refusal, RESOURCE_EXHAUSTED
// "received message larger than max (N vs. M)", which no handler can
// reword: the clients add which option raises it (--max-message-size).
// A request that is not valid protobuf (malformed, or a string that is not
// UTF-8) or over the limits of one request (limits.go) is answered
// INVALID_ARGUMENT with what is wrong, before any handler runs. Clients may ping during calls as often as every
// KeepaliveMinTime. The options include Codec's.
func Guard(log *slog.Logger, maxMessage int) []grpc.ServerOption {
	g := &guard{log: log}
	return []grpc.ServerOption{
		Codec(),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveMinTime}),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

type guard struct{ log *slog.Logger }

func (g *guard) recovered(method string, r any) error {
	g.log.Error("internal error in a call: the call fails, the server goes on", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "internal error in the flinkgo runtime (a bug, please report it with the server's log): %v", r)
}

func (g *guard) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, g.recovered(info.FullMethod, r)
		}
	}()
	if err := takeDecodeError(req); err != nil {
		return nil, g.refused(info.FullMethod, err)
	}
	return handler(ctx, req)
}

func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = g.recovered(info.FullMethod, r)
		}
	}()
	return handler(srv, decodeCheckedStream{ss, g, info.FullMethod})
}

// refused logs a request refused before its handler ran (its error holds
// none of its content) and returns its INVALID_ARGUMENT status.
func (g *guard) refused(method string, err error) error {
	g.log.Info("request refused: over a limit of one request, or not valid protobuf", "method", method, "error", err)
	return status.Error(codes.InvalidArgument, err.Error())
}

// decodeCheckedStream answers a streamed request that is not valid
// protobuf with INVALID_ARGUMENT (see undecodable).
type decodeCheckedStream struct {
	grpc.ServerStream
	guard  *guard
	method string
}

func (s decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if err := takeDecodeError(m); err != nil {
		return s.guard.refused(s.method, err)
	}
	return nil
}
