// This file reads back what the stream already did at an assignment: the
// output's exactly_once progress and the ids of the last resend_window
// transactions before the start offset, so a connector's re-send is known.

package debezium_txn

// Home of G61 (ARCHITECTURE.md §11.3): Debezium: exactly-once across restarts. Main test:
// TestExactlyOnceSkipsWhatStarRocksHolds.
//
// Home of G73 (ARCHITECTURE.md §11.3): a transaction re-sent whole is recognised by the next
// member too: the read-back of completed ids is retried until done. Main test:
// TestResentTransactionDroppedByAPreviousMemberIsKnownFromTheReadBack.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readProgress reads the output's durable progress (exactly_once) of the
// database partition and of every side partition; -1 and none without.
func (in *Input) readProgress(ctx context.Context, resolved map[tp]int64) (int64, map[tp]int64) {
	side := map[tp]int64{}
	pctx, cancel := context.WithTimeout(ctx, in.conf.RevokeTimeout)
	defer cancel()
	progress := int64(-1)
	off, ok, err := in.reg.Progress(pctx, in.dbPartition())
	if err != nil {
		in.log.Warnf("Reading the output's progress of %s failed; replays are dropped by the output: %v", in.dbPartition(), err)
	} else if ok {
		progress = off
	}
	if !ok || err != nil {
		// No progress reader (at_least_once or another output), or it
		// failed: side partitions have none either.
		return progress, side
	}
	for p := range resolved {
		if p.topic == in.conf.transactionTopic {
			continue
		}
		if off, ok, err := in.reg.Progress(pctx, p.String()); err == nil && ok {
			side[p] = off
		}
	}
	return progress, side
}

// readBackChunks is how many pieces readBackIDs reads, newest first, and
// readBackMinPiece the fewest records of a piece: a short history is read
// in one piece, as each piece costs a client and its first fetch.
const readBackChunks = 4

var readBackMinPiece int64 = 16384

// readBackIDs reads the transaction topic's END events of the last
// resend_window transactions before start (2 × resend_window records: a
// BEGIN and an END each), so that one Debezium re-sends whole after a
// restart is recognised. What earlier read-backs of this process already
// read is not read again (endCache: a member that lost its group session
// while reading back rejoins at the same start and reads only what is
// missing); the rest is read in pieces, the newest first — the newest are
// the ones a connector restart re-sends. A piece not read within its bound
// (growBound: revoke_timeout, doubled on each run-out up to
// readBackMaxBound, kept for the next assignment) is read again: nothing is
// emitted before the ids are known (ARCHITECTURE.md §13.7), because a
// previous member may have dropped a re-sent transaction's events as
// re-sends and committed the data partitions past them while the
// transaction topic's committed offset is still below its re-sent END;
// forgetting the id would leave that END waiting for events no one reads
// again, for ever. Only the end of ctx (the assignment lost, the input
// closed) stops the read-back early; the error then says from which offset
// on ids are remembered, and the pieces read stay in endCache.
func (in *Input) readBackIDs(ctx context.Context, start int64) []string {
	window := 2 * int64(in.conf.resendWindow)
	from := max(start-window, 0)
	if from >= start {
		return nil
	}
	step := max((start-from+readBackChunks-1)/readBackChunks, readBackMinPiece, 1)
	remembered := from
	gaps := in.ends.gaps(from, start)
read:
	for i := len(gaps) - 1; i >= 0; i-- { // newest first
		for hi := gaps[i][1]; hi > gaps[i][0]; hi -= step {
			lo := max(hi-step, gaps[i][0])
			ends, err := in.readPiece(ctx, lo, hi)
			if err != nil {
				remembered = hi
				in.log.Errorf("Re-reading the END events of %s before offset %d: %v; only the ids of ENDs from offset %d on are remembered, so a transaction Debezium re-sends whole from before that is not recognised", in.conf.transactionTopic, start, err, remembered)
				break read
			}
			in.ends.add(lo, hi, ends, window)
		}
	}
	if len(gaps) == 0 {
		in.log.Infof("The END events of %s at offsets [%d, %d) were read back earlier in this process: their ids are known without reading them again", in.conf.transactionTopic, from, start)
	}
	return in.ends.ids(remembered, start)
}

// readBackMaxBound caps the bound of one attempt at a read-back piece.
var readBackMaxBound = 2 * time.Minute

// readPiece reads the ENDs at offsets [lo, hi), retrying until it is done
// or ctx ends, each attempt within the read-back's growBound. An attempt
// that runs out keeps what it read: the next one goes on from there with
// the same client, so a broker slower than the bound still finishes the
// piece in about the time of one read (ARCHITECTURE.md §13.7), instead of
// starting over — with a new client and its first metadata fetch — and
// running out again while the piece is larger than what one bound reads.
func (in *Input) readPiece(ctx context.Context, lo, hi int64) ([]endAt, error) {
	base := in.conf.RevokeTimeout
	r := &endReader{in: in}
	defer r.close()
	var ends []endAt
	next := lo
	for attempt := 1; ; attempt++ {
		bound := in.readBound.get(base)
		began := time.Now()
		rctx, cancel := context.WithTimeout(ctx, bound)
		got, reached, err := readEndsFn(r, rctx, next, hi)
		cancel()
		ends = append(ends, got...)
		next = max(next, reached)
		if err == nil {
			in.readBound.done(bound, time.Since(began), base)
			return ends, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped (%w) after %d attempts: %w", ctx.Err(), attempt, err)
		}
		// Only a run-out says the broker needs longer; another failure
		// (a client not created) keeps the bound and waits before the
		// next attempt instead of retrying at once.
		ranOut := errors.Is(err, context.DeadlineExceeded)
		if ranOut {
			in.readBound.ranOut(bound, readBackMaxBound)
		}
		in.log.Warnf("Re-reading the END events of %s at offsets [%d, %d) (attempt %d): %v; read up to offset %d, going on from there within %v — nothing is emitted before the ids of the last resend_window transactions are known, so that a transaction Debezium re-sends is recognised", in.conf.transactionTopic, lo, hi, attempt, err, next, in.readBound.get(base))
		if !ranOut {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("stopped (%w) after %d attempts: %w", ctx.Err(), attempt, err)
			case <-time.After(readBackPause(attempt)):
			}
		}
	}
}

// readBackPause is the wait before the next attempt at a read-back piece
// whose attempt failed without running out of its bound: 200ms more per
// attempt, at most 2s.
func readBackPause(attempt int) time.Duration {
	return min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)
}

// readEndsFn is (*endReader).read; tests replace it to fail attempts on
// demand.
var readEndsFn = (*endReader).read

// endReader reads one read-back piece over its attempts with one client,
// whose consumption goes on where the previous attempt stopped.
type endReader struct {
	in *Input
	cl *kgo.Client
	at int64 // the offset the client consumes from next
}

func (r *endReader) close() {
	if r.cl != nil {
		r.cl.Close()
		r.cl = nil
	}
}

// read returns the END events at offsets [lo, hi) of the transaction topic
// read before ctx ended, in offset order, and the offset up to which it
// read (hi when done, with a nil error).
func (r *endReader) read(ctx context.Context, lo, hi int64) ([]endAt, int64, error) {
	in := r.in
	if lo >= hi {
		return nil, hi, nil
	}
	if r.cl != nil && r.at != lo {
		r.close() // not where the client stands: start over there
	}
	if r.cl == nil {
		cl, err := kgo.NewClient(append(in.conf.Client.Opts(in.KgoLogger()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{in.conf.transactionTopic: {0: kgo.NewOffset().At(lo)}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
		)...)
		if err != nil {
			return nil, lo, fmt.Errorf("creating a client: %w", err)
		}
		r.cl, r.at = cl, lo
	}
	var ends []endAt
	for {
		// Every record a poll returns is taken before the bound is
		// checked: the client has moved past them, and the next attempt
		// goes on from r.at. Aborted records (read_committed) are never
		// returned; the offsets after the last record seen may be such,
		// and are read past by the same client.
		fs := r.cl.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < r.at {
				return
			}
			r.at = rec.Offset + 1
			if rec.Offset >= hi || rec.Attrs.IsControl() {
				return
			}
			if m, err := decodeTxnMeta(rec.Value); err == nil && m.end {
				ends = append(ends, endAt{off: rec.Offset, id: m.id})
			}
		})
		if r.at >= hi {
			return ends, hi, nil
		}
		if ctx.Err() != nil {
			return ends, r.at, fmt.Errorf("not done within its bound: %w", ctx.Err())
		}
	}
}
