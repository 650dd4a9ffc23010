package kafka

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The in-process Kafka (kfake) has a read_committed fault that this file
// works around. Its fetch handler walks the requested partitions and stops
// the whole response as soon as the next batch would exceed the request's
// MaxBytes ("break full", 01_fetch.go:449 of kfake
// v0.0.0-20260918054303-01f206a7e32c). That jump skips the code after the
// partition's batch loop which lists the aborted transactions of the range
// returned (01_fetch.go:466-486), so the partition the response stops in
// carries batches but no AbortedTransactions, and a read_committed client
// (franz-go as any other) delivers the records of every aborted transaction
// in those batches. A partition stopped by its own PartitionMaxBytes, or by
// the end of its stable data, gets its list. abort_test.go shows it.
//
// The guard makes the response-wide limit unreachable, so that every
// partition ends on its own limit. kfake adds a batch to a partition only
// while the partition stays within its PartitionMaxBytes (the first batch of
// a response excepted, and that is at most one batch), and counts towards
// the response total also the one batch that overflowed it: a partition of
// limit L whose batches are at most B bytes counts at most L + B. The guard
// rewrites every read_committed fetch before kfake handles it:
//
//   - no fetch session: the request is made sessionless (epoch -1), kfake
//     answers without a session, and franz-go (any KIP-227 client) sends
//     full requests from then on, so a request names every partition its
//     response may carry (a session would add the partitions it remembers,
//     with limits set for an earlier request);
//   - each of its P partitions gets the limit max(MaxBytes/P - B, B), B the
//     topic's batch bound, never above the client's own limit; the sum of
//     L + B over the request is at most max(MaxBytes, 2·B·P);
//   - when that sum is above MaxBytes (more partitions than the budget can
//     bound), MaxBytes is raised to it: the response may then exceed what
//     the client asked for, but never ends on MaxBytes.
//
// B is a topic's max.message.bytes, which kfake enforces on every produced
// batch: the value the kit created the topic with, else kfake's default. A
// topic of many partitions therefore wants a small max.message.bytes
// (GuardedBatchBytes), so that the limits stay within the client's budget.

// defaultMaxBatch is kfake's default max.message.bytes
// (defMaxMessageBytes, data.go of kfake v0.0.0-20260918054303-01f206a7e32c),
// the bound of a batch of a topic created without one.
const defaultMaxBatch = 1048588

// minBatchBytes is the smallest batch cap franz-go's producer accepts.
const minBatchBytes = 512

// maxGuardedBatchBytes is the batch cap GuardedBatchBytes picks when the
// fetch budget allows it: above the workloads' batches (a few KiB), so that
// the cap does not change the log.
const maxGuardedBatchBytes = 32 << 10

// GuardedBatchBytes returns the batch cap for a topic of partitions
// partitions read with fetches of at most fetchMaxBytes per response: the
// largest maxBatch, up to 32 KiB, with 2*partitions*maxBatch <=
// fetchMaxBytes, so that the guard keeps the consumers' responses within
// their budget.
func GuardedBatchBytes(partitions, fetchMaxBytes int32) (int32, error) {
	if partitions <= 0 {
		return 0, fmt.Errorf("guarding fetches of %d partitions: need at least one", partitions)
	}
	b := min(maxGuardedBatchBytes, fetchMaxBytes/(2*partitions))
	if b < minBatchBytes {
		return 0, fmt.Errorf("guarding fetches of %d partitions: %d fetch bytes leave %d bytes a batch, below franz-go's %d", partitions, fetchMaxBytes, b, minBatchBytes)
	}
	return b, nil
}

// guard holds the batch bound of every topic created with a
// max.message.bytes of its own, by name and by id (fetch v13 names topics
// by id only), and rewrites fetches with them.
type guard struct {
	mu     sync.Mutex
	byName map[string]int32
	byID   map[[16]byte]int32
	// fetches counts the fetch requests the cluster received.
	fetches atomic.Int64
}

func newGuard() *guard {
	return &guard{byName: map[string]int32{}, byID: map[[16]byte]int32{}}
}

// setBound records the batch bound of a topic.
func (g *guard) setBound(topic string, id [16]byte, maxBatch int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byName[topic] = maxBatch
	g.byID[id] = maxBatch
}

// bound is the batch bound of a requested topic.
func (g *guard) bound(rt *kmsg.FetchRequestTopic) int32 {
	if b, ok := g.byName[rt.Topic]; ok && rt.Topic != "" {
		return b
	}
	if b, ok := g.byID[rt.TopicID]; ok {
		return b
	}
	return defaultMaxBatch
}

// control is the guard's kfake control function for Fetch: it rewrites a
// read_committed request (see the top of this file) and leaves it to kfake,
// which keeps the function for the next request.
func (g *guard) control(kreq kmsg.Request) (kmsg.Response, error, bool) {
	req, ok := kreq.(*kmsg.FetchRequest)
	if !ok {
		return nil, nil, false
	}
	g.fetches.Add(1)
	if req.IsolationLevel == 1 {
		g.rewrite(req)
	}
	return nil, nil, false
}

// rewrite applies the guard to one read_committed request.
func (g *guard) rewrite(req *kmsg.FetchRequest) {
	// Sessionless: kfake keeps no partition this request does not name. A
	// session the client still holds is left to expire in kfake's cache
	// (ID 0 unregisters nothing).
	req.SessionID, req.SessionEpoch = 0, -1
	req.ForgottenTopics = nil

	partitions := 0
	for i := range req.Topics {
		partitions += len(req.Topics[i].Partitions)
	}
	if partitions == 0 {
		return
	}
	share := int64(req.MaxBytes) / int64(partitions)
	var total int64
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range req.Topics {
		rt := &req.Topics[i]
		b := int64(g.bound(rt))
		limit := max(share-b, b)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			rp.PartitionMaxBytes = int32(min(int64(rp.PartitionMaxBytes), limit))
			total += int64(rp.PartitionMaxBytes) + b
		}
	}
	if total > int64(req.MaxBytes) {
		req.MaxBytes = int32(min(total, math.MaxInt32))
	}
}
