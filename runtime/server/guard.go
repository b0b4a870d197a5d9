package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultMaxMessageBytes is the default limit of one job-service message
// (`flinkgo serve --max-message-size`): a plan with its pickled UDFs and
// small inline tables fits many times over; large inline data belongs in
// files (Parquet, CSV), which the runtime reads without holding them in a
// message. The limit also bounds what one request can make the server hold.
const DefaultMaxMessageBytes = 64 << 20

// MaxMessageFlag names the option that raises the limit, for errors.
const MaxMessageFlag = "--max-message-size"

// Guard returns the server options that keep one call from taking the
// server down: a panic in a handler becomes that call's INTERNAL error
// (logged with its stack), and a request over the message limit
// (maxMessage bytes) gets an error naming the limit and the option that
// raises it.
func Guard(log *slog.Logger, maxMessage int) []grpc.ServerOption {
	g := &guard{log: log, max: maxMessage}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}
}

type guard struct {
	log *slog.Logger
	max int
}

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
	return handler(ctx, req)
}

func (g *guard) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = g.recovered(info.FullMethod, r)
		}
	}()
	return handler(srv, &limitedStream{ServerStream: ss, max: g.max})
}

// limitedStream names the message limit when a request is over it (the
// streaming calls read their request through it; gRPC's own message
// says only "received message larger than max").
type limitedStream struct {
	grpc.ServerStream
	max int
}

func (s *limitedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max") {
		return TooLarge(st.Message(), s.max)
	}
	return err
}

// TooLarge is the error of a request over the message limit.
func TooLarge(grpcMessage string, max int) error {
	return status.Errorf(codes.ResourceExhausted,
		"the request is larger than the server's message limit of %d MiB (%s): start the server with a larger %s, or put large inline data in files (write Parquet and read it with read_parquet)",
		max>>20, grpcMessage, MaxMessageFlag)
}
