package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// Recovery of a Kafka sink, before any subtask of a (re)started attempt
// writes, as Flink's KafkaCommitter and TransactionAborter:
//
//  1. every transaction the restored checkpoint holds precommitted is
//     committed (its checkpoint completed; the failed attempt may not have
//     committed it, or may have): EndTxn with its producer id and epoch,
//     from any client. A transaction already committed counts as done.
//  2. the transactions the failed attempt opened after the checkpoint are
//     aborted: for each subtask, the ids <prefix>-<subtask>-<n> from the
//     restored counter up are initialised (InitProducerId fences the id
//     and aborts its open transaction) until one that was never used
//     (epoch 0). Counters grow by one per transaction, so the scan misses
//     none; a read_committed reader's last stable offset then moves on.

// kafkaRecoveryTimeout bounds recovery: an unreachable broker fails the
// attempt with a clear error instead of hanging it.
const kafkaRecoveryTimeout = time.Minute

// RecoverKafka commits the transactions of the restored states (by old
// subtask index) and aborts what the failed attempts left open, for
// subtasks 0 up to the larger of the old and new parallelism. states is
// empty for a fresh start or a restart without a checkpoint: every
// subtask's ids are scanned from 0. A sink not exactly-once has nothing
// to recover.
func RecoverKafka(k *planpb.KafkaSink, states map[int]KafkaState, parallelism int) error {
	s, err := parseSink(k)
	if err != nil {
		return err
	}
	if s.delivery != planpb.KafkaSink_EXACTLY_ONCE {
		return nil
	}
	var txns []KafkaTransaction
	for _, st := range states {
		txns = append(txns, st.Transactions...)
	}
	if err := commitTransactions(k, s, txns); err != nil {
		return err
	}
	subtasks := parallelism
	for i := range states {
		subtasks = max(subtasks, i+1)
	}
	cl, err := recoveryClient(k, s)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRecoveryTimeout)
	defer cancel()
	for sub := range subtasks {
		for n := states[sub].Counter; ; n++ {
			id := transactionalID(k.GetTransactionalIdPrefix(), sub, n)
			epoch, err := fence(ctx, cl, id, s.txnTimeout)
			if err != nil {
				return fmt.Errorf("sink: write_kafka to %q: aborting transaction %s of an earlier attempt: %w", k.GetTopic(), id, err)
			}
			if epoch == 0 {
				break // never used before: the ids after it were not either
			}
		}
	}
	return nil
}

// CommitKafka commits precommitted transactions (a sink's last ones, held
// for the job's end): idempotent.
func CommitKafka(k *planpb.KafkaSink, txns []KafkaTransaction) error {
	s, err := parseSink(k)
	if err != nil {
		return err
	}
	return commitTransactions(k, s, txns)
}

func recoveryClient(k *planpb.KafkaSink, s sinkSettings) (*kgo.Client, error) {
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return nil, fmt.Errorf("sink: write_kafka to %q: %w", k.GetTopic(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("sink: write_kafka to %q: cannot reach the Kafka brokers at %s: %w", k.GetTopic(), k.GetBootstrapServers(), err)
	}
	return cl, nil
}

// retriable reports whether a transaction coordinator's error code is
// worth a retry: it is loading, moving, or finishing an earlier end.
func retriable(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable)
}

// withRetries runs try until it returns a non-retriable error or ctx ends.
func withRetries(ctx context.Context, try func() error) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := try()
		if err == nil || !retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}

// fence initialises transactional id: the broker aborts its open
// transaction and bumps its epoch. It returns the new epoch: 0 for an id
// never used before.
func fence(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) (int16, error) {
	var epoch int16
	err := withRetries(ctx, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(timeout / time.Millisecond)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		epoch = resp.ProducerEpoch
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	return epoch, err
}

// commitTransactions commits txns by EndTxn with their producer ids and
// epochs. One the broker already committed counts as done; one it aborted
// (its timeout passed, or it was fenced) is an error: its rows are lost.
func commitTransactions(k *planpb.KafkaSink, s sinkSettings, txns []KafkaTransaction) error {
	if len(txns) == 0 {
		return nil
	}
	cl, err := recoveryClient(k, s)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaRecoveryTimeout)
	defer cancel()
	for _, t := range txns {
		if err := commitTransaction(ctx, cl, t); err != nil {
			return fmt.Errorf("sink: write_kafka to %q: committing transaction %s (producer id %d, epoch %d) of checkpoint %d: %w%s",
				k.GetTopic(), t.TransactionalID, t.ProducerID, t.Epoch, t.Checkpoint, err, timeoutHint(err))
		}
	}
	return nil
}

func commitTransaction(ctx context.Context, cl *kgo.Client, t KafkaTransaction) error {
	err := withRetries(ctx, func() error {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = t.TransactionalID, t.ProducerID, t.Epoch, true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err == nil {
		return nil
	}
	// A retry of a commit the broker completed is refused by epoch on some
	// versions: ask what became of the transaction.
	committed, derr := committedAlready(ctx, cl, t)
	if derr != nil {
		return fmt.Errorf("%w (and describing it: %w)", err, derr)
	}
	if committed {
		return nil
	}
	return err
}

// committedAlready reports whether the broker's last transaction of t's id
// is t's, committed.
func committedAlready(ctx context.Context, cl *kgo.Client, t KafkaTransaction) (bool, error) {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{t.TransactionalID}
	var state kmsg.DescribeTransactionsResponseTransactionState
	err := withRetries(ctx, func() error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.TransactionStates) != 1 {
			return fmt.Errorf("the broker described %d transactions", len(resp.TransactionStates))
		}
		state = resp.TransactionStates[0]
		return kerr.ErrorForCode(state.ErrorCode)
	})
	if err != nil {
		return false, err
	}
	sameProducer := state.ProducerID == t.ProducerID && (state.ProducerEpoch == t.Epoch || state.ProducerEpoch == t.Epoch+1)
	return sameProducer && state.State == "CompleteCommit", nil
}

// timeoutHint explains a commit refused by epoch: the broker aborted the
// transaction.
func timeoutHint(err error) string {
	if errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidTxnState) {
		return "; the broker aborted the transaction, and the rows it held are lost: transaction.timeout.ms " +
			"(a write_kafka property) must exceed the checkpoint interval plus the time a restart takes, " +
			"and no other writer may use the same transactional_id_prefix"
	}
	return ""
}
