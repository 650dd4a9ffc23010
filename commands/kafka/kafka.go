// Package kafka is the `kafka` subcommand: a Kafka broker on this machine
// for local work, so that every shipped config (config/, examples/) runs on a
// laptop against it and the emulator. It is the test kit's in-process Kafka
// (testkit/kafka: kfake with the read_committed fetch guard always on), with
// transactions, consumer groups and topic administration, listening on a
// TCP address until SIGINT or SIGTERM. kfake is a test double: the command
// is of the default build only, like demo and bench (commands_dev.go;
// ARCHITECTURE.md §2), and is no Kafka to run production on.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	kit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
)

// DefaultAddr is where the broker listens by default: the address every
// shipped config's KAFKA_BROKERS defaults to (localhost:9092).
const DefaultAddr = "127.0.0.1:9092"

// Topic is a topic to create at start.
type Topic struct {
	Name       string
	Partitions int32
}

// ParseTopics reads a --topics value: comma-separated `name[:partitions]`
// (one partition when the count is left out), e.g. "cdc:4,maxwell".
func ParseTopics(s string) ([]Topic, error) {
	var out []Topic
	seen := map[string]bool{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, count, hasCount := strings.Cut(entry, ":")
		name = strings.TrimSpace(name)
		t := Topic{Name: name, Partitions: 1}
		if name == "" {
			return nil, fmt.Errorf("--topics entry %q has no topic name: write name:partitions, e.g. cdc:4", entry)
		}
		if hasCount {
			n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 32)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--topics entry %q: the partition count %q is not a whole number from 1", entry, count)
			}
			t.Partitions = int32(n)
		}
		if seen[name] {
			return nil, fmt.Errorf("--topics names %s twice", name)
		}
		seen[name] = true
		out = append(out, t)
	}
	return out, nil
}

// Options configure a Broker.
type Options struct {
	// Addr is the TCP address to listen on, which the broker also
	// advertises to its clients (DefaultAddr when empty; port 0: a free
	// one).
	Addr string
	// Topics are created at start; one that exists (DataDir) is kept as it
	// is.
	Topics []Topic
	// DataDir, when set, keeps the cluster's state (topics, records,
	// committed transactions, group offsets) in this directory across
	// restarts (kfake's persistence); empty: memory only.
	DataDir string
}

// Broker is a running local Kafka.
type Broker struct {
	c    *kit.Cluster
	addr string
	// Created and Kept are the topics of Options.Topics that Start created
	// and that already existed (from DataDir), with their partition counts.
	Created, Kept []Topic
}

// Start starts the broker and creates the topics.
func Start(o Options) (*Broker, error) {
	addr := o.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	// kfake listens on 127.0.0.1 at a port of its choosing; the broker
	// listens where the user said instead, and advertises that address.
	listen := kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) })
	extra := []kfake.Opt{listen}
	if o.DataDir != "" {
		extra = append(extra, kfake.DataDir(o.DataDir))
	}
	c, err := kit.Start(kit.Kfake(extra...))
	if err != nil {
		return nil, fmt.Errorf("%w%s", err, addrHint(err, addr))
	}
	b := &Broker{c: c, addr: c.ListenAddrs()[0]}
	existing, err := b.partitions(context.Background())
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, t := range o.Topics {
		if n, ok := existing[t.Name]; ok {
			b.Kept = append(b.Kept, Topic{Name: t.Name, Partitions: n})
			continue
		}
		if err := c.CreateTopic(t.Name, t.Partitions, nil); err != nil {
			c.Close()
			return nil, err
		}
		b.Created = append(b.Created, t)
	}
	return b, nil
}

// addrHint tells what to do about an address that is taken ("" for any
// other error).
func addrHint(err error, addr string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return fmt.Sprintf("; another process listens on %s (a Kafka broker, another `kafka` command?): stop it, or give --addr 127.0.0.1:0 for a free port and point KAFKA_BROKERS there", addr)
}

// partitions returns every topic of the cluster with its partition count.
func (b *Broker) partitions(ctx context.Context) (map[string]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		return nil, fmt.Errorf("listing the topics: %w", err)
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the topics: %w", err)
	}
	out := map[string]int32{}
	for name, d := range details {
		if d.Err == nil {
			out[name] = int32(len(d.Partitions))
		}
	}
	return out, nil
}

// Addr is the address the broker listens on and advertises.
func (b *Broker) Addr() string { return b.addr }

// Topics returns every topic of the cluster with its partition count, by
// name (those clients created too).
func (b *Broker) Topics(ctx context.Context) ([]Topic, error) {
	m, err := b.partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Topic, 0, len(m))
	for name, n := range m {
		out = append(out, Topic{Name: name, Partitions: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Close stops the broker (with DataDir, after writing its state).
func (b *Broker) Close() { b.c.Close() }
