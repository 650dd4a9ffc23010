package workload

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The in-process Kafka (kfake) has a read_committed fault that this file
// works around. Its fetch handler walks the requested partitions and stops
// the whole response as soon as the next batch would exceed the request's
// MaxBytes ("break full", 01_fetch.go:449 of kfake
// v0.0.0-20260918054303-01f206a7e32c). That jump skips the code after the
// partition's batch loop which lists the aborted transactions of the range
// returned (01_fetch.go:466-486), so the partition the response stops in carries
// batches but no AbortedTransactions, and a read_committed client (franz-go
// as any other) delivers the records of every aborted transaction in those
// batches. A partition stopped by its own PartitionMaxBytes, or by the end
// of its stable data, gets its list. kfake_abort_test.go shows it.
//
// GuardFetches makes the response-wide limit unreachable, so that every
// partition ends on its own limit: it lowers each fetched partition's
// PartitionMaxBytes to MaxBytes/partitions - maxBatch. kfake adds a batch to
// a partition only while the partition stays within its limit (the first
// batch of a response excepted, and at most maxBatch), and counts towards
// the response total also the one batch that overflowed it, so a partition
// counts at most limit + maxBatch bytes and a request's partitions at most
// partitions*(limit + maxBatch) <= MaxBytes: the response never ends on
// MaxBytes. The producer must keep its batches within maxBatch (the topic's
// max.message.bytes, which kfake enforces); the bound needs MaxBytes >=
// 2*partitions*maxBatch (GuardedBatchBytes picks such a maxBatch) and
// requests that fetch only this topic.

// minBatchBytes is the smallest batch cap franz-go's producer accepts.
const minBatchBytes = 512

// maxGuardedBatchBytes is the batch cap GuardedBatchBytes picks when the
// fetch budget allows it: above the workloads' batches (a few KiB), so that
// the cap does not change the log.
const maxGuardedBatchBytes = 32 << 10

// GuardedBatchBytes returns the batch cap for a topic of partitions
// partitions read with fetches of at most fetchMaxBytes per response: the
// largest maxBatch, up to 32 KiB, with 2*partitions*maxBatch <=
// fetchMaxBytes.
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

// CreateGuardedTopic creates topic in c with partitions partitions and a
// max.message.bytes of maxBatch, and guards every fetch of it
// (GuardFetches). Its producers must cap their batches at maxBatch
// (ProducerOptions.BatchMaxBytes); kfake refuses larger ones.
func CreateGuardedTopic(c *kfake.Cluster, topic string, partitions, maxBatch int32) error {
	if err := c.CreateTopic(topic, partitions, map[string]string{"max.message.bytes": strconv.Itoa(int(maxBatch))}); err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	info := c.TopicInfo(topic)
	if info == nil {
		return fmt.Errorf("creating topic %s: the cluster does not know it", topic)
	}
	GuardFetches(c, topic, info.TopicID, partitions, maxBatch)
	return nil
}

// GuardFetches rewrites, before kfake handles it, every fetch request for
// topic (named, or by id from fetch v13 on) so that no response ends on its
// MaxBytes inside one of the topic's partitions (see the top of this file).
// Batches of the topic must not exceed maxBatch.
func GuardFetches(c *kfake.Cluster, topic string, id [16]byte, partitions, maxBatch int32) {
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req, ok := kreq.(*kmsg.FetchRequest)
		if !ok {
			return nil, nil, false
		}
		// Below 2*partitions*maxBatch the bound cannot hold; maxBatch
		// still lets every partition move (and the bench's strict
		// verification reports what leaks).
		limit := max(req.MaxBytes/partitions-maxBatch, maxBatch)
		for i := range req.Topics {
			rt := &req.Topics[i]
			if rt.Topic != topic && rt.TopicID != id {
				continue
			}
			for j := range rt.Partitions {
				rt.Partitions[j].PartitionMaxBytes = min(rt.Partitions[j].PartitionMaxBytes, limit)
			}
		}
		// Not handled: kfake serves the rewritten request and keeps this
		// function for the next one.
		return nil, nil, false
	})
}
