// Package kafka is the one way the project's tests, demo and bench start an
// in-process Kafka: kfake, with the read_committed fetch guard always on
// (guard.go), topics created through the kit so that the guard knows their
// batch bound, and the same group settings everywhere.
//
// kfake is a test double: only the test kit and the commands that need a
// Kafka on this machine (demo, bench) import it, and the production build
// (-tags production) links neither (ARCHITECTURE.md §2, layers_test.go).
package kafka

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TB is the part of testing.TB that New uses (the kit's non-test users do
// not link the testing package).
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Cluster is a running in-process Kafka whose read_committed fetches are
// guarded. The embedded kfake cluster gives the tests its controls
// (ControlKey, KeepControl, ...); CreateTopic is the kit's.
type Cluster struct {
	*kfake.Cluster
	guard *guard
}

// Option configures Start and New.
type Option func(*config)

type config struct {
	brokers  int
	minGroup time.Duration
	topics   []topicSpec
	extra    []kfake.Opt
}

type topicSpec struct {
	name       string
	partitions int32
	configs    map[string]string
}

// Topic creates a topic when the cluster starts; configs are its topic
// configs (nil: kfake's defaults). Its max.message.bytes, if set, is the
// guard's batch bound for it.
func Topic(name string, partitions int32, configs map[string]string) Option {
	return func(c *config) { c.topics = append(c.topics, topicSpec{name, partitions, configs}) }
}

// Brokers sets the number of brokers (default 1).
func Brokers(n int) Option { return func(c *config) { c.brokers = n } }

// Kfake passes options to kfake.NewCluster (SASL, ...). Topics go through
// Topic or CreateTopic instead, so that the guard knows their batch bound.
func Kfake(opts ...kfake.Opt) Option { return func(c *config) { c.extra = append(c.extra, opts...) } }

// MinGroupSessionTimeout is the shortest group session the cluster accepts
// (the default 500 ms lets tests move partitions quickly; kfake's own is
// 6 s).
func MinGroupSessionTimeout(d time.Duration) Option { return func(c *config) { c.minGroup = d } }

// Start starts a cluster; the caller closes it.
func Start(opts ...Option) (*Cluster, error) {
	cfg := config{brokers: 1, minGroup: 500 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	kc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(cfg.brokers), kfake.GroupMinSessionTimeout(cfg.minGroup)}, cfg.extra...)...)
	if err != nil {
		return nil, fmt.Errorf("starting the in-process Kafka: %w", err)
	}
	c := &Cluster{Cluster: kc, guard: newGuard()}
	// The first control function for Fetch: every other one (a test's)
	// sees the guarded request.
	kc.ControlKey(int16(kmsg.Fetch), c.guard.control)
	for _, t := range cfg.topics {
		if err := c.CreateTopic(t.name, t.partitions, t.configs); err != nil {
			kc.Close()
			return nil, err
		}
	}
	return c, nil
}

// New starts a cluster for a test and closes it when the test ends.
func New(t TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := Start(opts...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Fetches is how many fetch requests the cluster has received. A client
// sends its next fetch to a broker only once it has the previous answer:
// when one consumer reads a single-broker cluster, two fetches received
// after records were committed mean that it has fetched them (unless it
// paused their partitions).
func (c *Cluster) Fetches() int64 { return c.guard.fetches.Load() }

// Brokers are the addresses to seed clients with.
func (c *Cluster) Brokers() []string { return c.ListenAddrs() }

// CreateTopic creates topic with partitions partitions and configs (nil:
// kfake's defaults) and tells the guard its batch bound: its
// max.message.bytes, which kfake enforces on produce. The topic's producers
// must keep their batches within it (kgo.ProducerBatchMaxBytes).
func (c *Cluster) CreateTopic(topic string, partitions int32, configs map[string]string) error {
	bound := int32(defaultMaxBatch)
	if v, ok := configs["max.message.bytes"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("creating topic %s: max.message.bytes %q is not a positive 32-bit integer", topic, v)
		}
		bound = int32(n)
	}
	if err := c.Cluster.CreateTopic(topic, partitions, configs); err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	info := c.TopicInfo(topic)
	if info == nil {
		return fmt.Errorf("creating topic %s: the cluster does not know it", topic)
	}
	c.guard.setBound(topic, info.TopicID, bound)
	return nil
}

// CreateGuardedTopic creates topic with partitions partitions whose batches
// are at most maxBatch bytes (GuardedBatchBytes picks it for a fetch
// budget). Its producers must cap their batches at maxBatch; kfake refuses
// larger ones.
func (c *Cluster) CreateGuardedTopic(topic string, partitions, maxBatch int32) error {
	return c.CreateTopic(topic, partitions, map[string]string{"max.message.bytes": strconv.Itoa(int(maxBatch))})
}
