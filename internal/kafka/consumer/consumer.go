// Package consumer is the consumer-group shell of the project's Kafka inputs,
// kafka_txn and debezium_txn (ARCHITECTURE.md §6, §13): the Benthos-facing
// input (Connect, ReadBatch, Close), the poll loop with one fetch-error
// reporter, the commit loop, the rebalance sequence (assign, revoke or lose,
// renew the membership lease), the output partitions an assignment claims in
// the registry (epochs, leases, committed-through offsets), the wait for an
// assignment, and the fields both inputs share (GroupFields, TopicsField).
//
// An input implements Input for what differs: what it makes of fetched
// records, what it delivers and commits, and what an assignment and a
// release mean to its state. The shell and the input share one lock, the
// input's, given to New.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// defaultMetadataMinAge is franz-go's default least time between two
// metadata refreshes.
const defaultMetadataMinAge = 5 * time.Second

// maxPollRecords bounds one poll, so that the lock that hands the records
// to the input is held briefly.
const maxPollRecords = 10000

// Consumer is the shell of one consumer input.
type Consumer struct {
	conf  Config
	in    Input
	log   *service.Logger
	reg   *registry.Registry
	lease *kafka.GroupLease
	// lim rate-limits repeating fetch and commit errors and franz-go's own
	// warnings.
	lim *kafka.LogLimiter
	// watch is where the registry leaves what the outputs and assemblers
	// tell the input (committed.go).
	watch *registry.Watch

	// commitMu serialises offset commits, so a revoke waits for a commit
	// that is already in flight.
	commitMu sync.Mutex
	// leaseMu guards leased, the claimed output partitions that are not
	// being released: the ones a confirmed group request renews
	// (renewLease). It is its own lock, never the input's, because the
	// renewal runs inside franz-go's write of a heartbeat, on the goroutine
	// that writes every request to the broker and reads none of their
	// replies before the hook returns: a renewal waiting for the input's
	// lock held back the heartbeats (and commits) for as long as any
	// holder of that lock ran, e.g. the poll loop feeding a large poll on
	// a starved machine, and the group ended the session. Taken after mu
	// where both are held.
	leaseMu sync.Mutex
	leased  map[string]bool
	// passes counts the commits that ran to their end (CommitPasses).
	passes atomic.Uint64
	loops  sync.WaitGroup

	// mu is the input's lock; it guards the fields below and the input's
	// state.
	mu      sync.Locker
	cl      *kgo.Client
	cancel  context.CancelFunc
	closed  bool
	stopped error
	notify  chan struct{}
	// claims are the output partitions of the current assignments
	// (ClaimLocked).
	claims map[string]*claim
	// held are the partitions franz-go assigned and did not take back.
	held map[string]map[int32]bool
	// assigning is set during franz-go's assignment callback, whose lease
	// end, taken when the callback began, is assignUntil.
	assigning   bool
	assignUntil time.Time
	wait        assignmentWait
	// afterFunc starts the timer of a wait for an assignment:
	// time.AfterFunc, which a test wraps to fire the timer when it wants.
	afterFunc func(time.Duration, func()) *time.Timer
}

// New returns the shell of an input: in is what the input does, mu its
// lock (held when the shell calls in's Locked methods, and when the input
// calls the shell's).
func New(conf Config, mgr *service.Resources, mu sync.Locker, in Input) *Consumer {
	c := &Consumer{
		conf:   conf,
		in:     in,
		log:    mgr.Logger(),
		reg:    registry.Get(mgr),
		lim:    kafka.NewLogLimiter(kafka.LogInterval),
		mu:     mu,
		notify: make(chan struct{}),
		claims: map[string]*claim{},
		leased: map[string]bool{},
		held:   map[string]map[int32]bool{},

		afterFunc: time.AfterFunc,
	}
	c.lease = kafka.NewGroupLease(conf.SessionTimeout, c.renewLease)
	c.watch = c.reg.Watch()
	return c
}

// Lease is the input's membership lease (internal/kafka GroupLease).
func (c *Consumer) Lease() *kafka.GroupLease { return c.lease }

// KgoLogger is franz-go's logger for the input's other clients: the
// shell's log lines, rate-limited with its own.
func (c *Consumer) KgoLogger() kgo.Logger { return kafka.NewLogger(c.log, c.lim) }

// SignalLocked wakes every ReadBatch that waits for records, an
// acknowledgement or a change of the assignment.
func (c *Consumer) SignalLocked() {
	close(c.notify)
	c.notify = make(chan struct{})
}

// Stop marks an error of Config.Check that no retry can fix: Connect then
// stops the input, and the pipeline with it, and the binary exits with
// status 1 (internal/exitstatus).
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// opts are the client's options: the connection, the group (with the
// shell's rebalance callbacks and lease), the metadata refresh, the topics
// and the input's own.
func (c *Consumer) opts(logger kgo.Logger) []kgo.Opt {
	opts := append(c.conf.Client.Opts(logger), c.conf.ConsumerOpts(kafka.Rebalance{
		Assigned: c.assigned, Revoked: c.revoked, Lost: c.lost,
		AdjustOffsets: c.in.AdjustOffsets, Lease: c.lease,
	})...)
	// franz-go refuses a max age below its min age (5s by default).
	opts = append(opts, kgo.MetadataMaxAge(c.conf.MetadataMaxAge), kgo.MetadataMinAge(min(c.conf.MetadataMaxAge, defaultMetadataMinAge)))
	if c.conf.Regexp {
		opts = append(opts, kgo.ConsumeRegex())
	}
	opts = append(opts, kgo.ConsumeTopics(c.conf.Topics...))
	return append(opts, c.conf.Opts...)
}

// Connect checks the cluster (and what the input checks), joins the
// consumer group and starts the loops.
func (c *Consumer) Connect(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped != nil {
		c.mu.Unlock()
		return c.stopped
	}
	if c.closed {
		c.mu.Unlock()
		return service.ErrEndOfInput
	}
	if c.cl != nil {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()

	logger := c.KgoLogger()
	if err := c.conf.Client.CheckCluster(ctx, logger, c.conf.CheckField, c.conf.ACLs, c.conf.CheckTopics...); err != nil {
		if kafka.IsDefinite(err) {
			// Refused credentials, TLS at one end only, an untrusted
			// certificate, no Kafka broker at the address.
			return c.stop(err)
		}
		return err
	}
	if c.conf.Check != nil {
		if err := c.conf.Check(ctx, logger); err != nil {
			if errors.As(err, new(stopError)) {
				return c.stop(err)
			}
			return err
		}
	}
	// The client joins the group as soon as it exists: the lock is held
	// until the input has it, so that no rebalance callback (which takes
	// the lock) finds the input without its client.
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return service.ErrEndOfInput
	}
	cl, err := kgo.NewClient(c.opts(logger)...)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("creating kafka consumer: %w", err)
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	c.cl, c.cancel = cl, cancel
	c.waitBeginLocked()
	run := c.in.StartLocked(cl)
	c.mu.Unlock()

	c.loops.Add(3)
	go c.pollLoop(loopCtx, cl)
	go c.commitLoop(loopCtx, cl)
	go c.watchLoop(loopCtx)
	if run != nil {
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			run(loopCtx)
		}()
	}
	c.log.Infof("Consuming %s as group %q from seed_brokers [%s]", c.conf.Describe, c.conf.ConsumerGroup, c.conf.Client.BrokersString())
	return nil
}

// stop makes the input give up at Connect: logged, recorded for the exit
// status, and returned as service.ErrEndOfInput, which closes the input and
// ends the stream.
func (c *Consumer) stop(err error) error {
	c.log.Errorf("The %s input stops, and the pipeline with it: %v", c.conf.Name, err)
	exitstatus.Fail(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = fmt.Errorf("%w: %v", service.ErrEndOfInput, err)
	return c.stopped
}

// ReadBatch returns the input's next batch (NextBatchLocked), waiting until
// it has one.
func (c *Consumer) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	return kafka.ReadBatch(ctx, c.mu, func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error) {
		if c.stopped != nil {
			return nil, nil, 0, nil, c.stopped
		}
		if err := kafka.ReadState(c.closed, c.cl); err != nil {
			return nil, nil, 0, nil, err
		}
		batch, ack, wait := c.in.NextBatchLocked(ctx)
		return batch, ack, wait, c.notify, nil
	})
}

// Close commits what is committable, leaves the group (which revokes, fences
// and commits every partition through the rebalance callbacks) and closes
// the client.
func (c *Consumer) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cl, cancel := c.cl, c.cancel
	c.waitEndLocked()
	c.SignalLocked()
	c.mu.Unlock()
	if cl != nil {
		cancel()
		c.loops.Wait()
		c.conf.Leave(ctx, c.log, cl, func(ctx context.Context) error { return c.commit(ctx, cl, nil) })
	}
	c.watch.Close()
	c.in.Closed(ctx)
	return nil
}

// QuoteTopic is the regular expression that matches exactly topic, for an
// input that consumes regular expressions and one named topic.
func QuoteTopic(topic string) string { return "^" + regexp.QuoteMeta(topic) + "$" }
