// This file resolves where a message belongs: its partition name, its source
// offset and the target database and table of a data row.

package txnassembler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// offsetField names where source offsets come from, for error messages.
func (p *Processor) offsetField() string {
	if p.sourceOffset != nil {
		return fieldSourceOffset
	}
	return "kafka_offset"
}

// resolvePartition finds the source stream of a message.
func (p *Processor) resolvePartition(batch service.MessageBatch, i int, ev event) (string, error) {
	if p.partition != nil {
		s, err := batch.TryInterpolatedString(i, p.partition)
		if err != nil {
			return "", fmt.Errorf("field %q: interpolation failed: %w", fieldPartition, err)
		}
		if s == "" {
			return "", fmt.Errorf("field %q gave an empty partition", fieldPartition)
		}
		return s, nil
	}
	msg := batch[i]
	topic, hasTopic := msg.MetaGet("kafka_topic")
	part, hasPart := msg.MetaGetMut("kafka_partition")
	if hasTopic && hasPart && topic != "" {
		if n, ok := wholeNumber(part); ok {
			return p.partNames.name(topic, int32(n)), nil
		}
		return topic + "/" + fmt.Sprint(part), nil
	}
	if ev.envPartition != "" {
		return ev.envPartition, nil
	}
	return "", fmt.Errorf("no partition: the message has no kafka_topic and kafka_partition metadata and no envelope partition field; set the %q field", fieldPartition)
}

// resolveOffset finds the source offset of a message; ok is false when the
// source has none (the caller then uses the arrival counter).
func (p *Processor) resolveOffset(batch service.MessageBatch, i int) (int64, bool, error) {
	if p.sourceOffset != nil {
		s, err := batch.TryInterpolatedString(i, p.sourceOffset)
		if err != nil {
			return 0, false, badField(fieldSourceOffset, "interpolation failed: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, false, badField(fieldSourceOffset, "must give a whole number, got %q", s)
		}
		return n, true, nil
	}
	v, exists := batch[i].MetaGetMut("kafka_offset")
	if !exists {
		return 0, false, nil
	}
	n, ok := wholeNumber(v)
	if !ok {
		return 0, false, badField("kafka_offset", "metadata must be a whole number, got %v", v)
	}
	return n, true, nil
}

// partitionNames remembers the last few default partition names, so that
// each message does not build its "<topic>/<partition>" again.
type partitionNames struct {
	topic [4]string
	part  [4]int32
	names [4]string
	next  uint8
}

func (c *partitionNames) name(topic string, part int32) string {
	for i := range c.names {
		if c.part[i] == part && c.topic[i] == topic && c.names[i] != "" {
			return c.names[i]
		}
	}
	n := contract.KafkaPartition(topic, part)
	i := c.next % uint8(len(c.names))
	c.topic[i], c.part[i], c.names[i] = topic, part, n
	c.next++
	return n
}

func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// target applies table_mapping and database to a data row or a schema
// change.
func (p *Processor) target(ev event) (event, error) {
	db, table := ev.database, ev.table
	if table == "" {
		if ev.schema {
			return ev, badField("table", "is missing or empty: a schema change needs the table it defines")
		}
		return ev, badField("table", "is missing or empty: a data row needs its source table")
	}
	mappedDB := ""
	if p.tableMapping != nil {
		to, ok := p.tableMapping[db+"."+table]
		if !ok {
			to, ok = p.tableMapping[table]
		}
		if ok {
			if d, t, hasDot := strings.Cut(to, "."); hasDot {
				mappedDB, table = d, t
			} else {
				table = to
			}
		}
	}
	switch {
	case mappedDB != "":
		db = mappedDB
	case p.database != "":
		db = p.database
	}
	if db == "" {
		return ev, badField("database", "is missing or empty for table %q: set the processor's database field or map the table to db.table", table)
	}
	ev.database, ev.table = db, table
	return ev, nil
}
