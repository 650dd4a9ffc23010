package debezium_txn

import (
	"strings"
	"unicode/utf16"
)

// maxTopicName is the longest topic name Kafka accepts; Debezium cuts
// longer names to it.
const maxTopicName = 249

// sanitizeTopicName turns a name into the topic name Debezium's default
// topic naming strategy writes to: every character outside [a-zA-Z0-9._-]
// becomes "_" (one per UTF-16 unit, as Debezium replaces Java chars), the
// result is cut to 249 characters, and "." and ".." become "_" and "__".
// The END event names the collection unsanitized, so the default mapping
// must sanitize to find the topic (ARCHITECTURE.md §13.3).
func sanitizeTopicName(name string) string {
	valid := true
	for i := 0; i < len(name); i++ {
		if !validTopicByte(name[i]) {
			valid = false
			break
		}
	}
	if !valid {
		var b strings.Builder
		b.Grow(len(name))
		for _, r := range name {
			switch {
			case r < 0x80 && validTopicByte(byte(r)):
				b.WriteByte(byte(r))
			case utf16.RuneLen(r) == 2:
				b.WriteString("__")
			default:
				b.WriteByte('_')
			}
		}
		name = b.String()
	}
	switch {
	case len(name) > maxTopicName:
		name = name[:maxTopicName]
	case name == ".":
		name = "_"
	case name == "..":
		name = "__"
	}
	return name
}

func validTopicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// topicNaming maps Debezium data collections to topics: an explicit
// collection_topics entry, else Debezium's default name
// <topic_prefix>.<collection>, sanitized.
type topicNaming struct {
	prefix   string
	explicit map[string]string
	// defaultPrefix is the sanitized "<prefix>." every default name
	// starts with.
	defaultPrefix string
}

func newTopicNaming(prefix string, explicit map[string]string) topicNaming {
	return topicNaming{prefix: prefix, explicit: explicit, defaultPrefix: sanitizeTopicName(prefix + ".")}
}

// topicOf returns the topic of a collection as the END event names it.
func (n topicNaming) topicOf(collection string) string {
	if t, ok := n.explicit[collection]; ok {
		return t
	}
	return sanitizeTopicName(n.prefix + "." + collection)
}

// mapped reports whether some collection can map to a topic: a
// collection_topics value, or a name Debezium's default naming can give.
// A consumed topic that is neither can only hold events whose END counts
// go to another topic — a routing SMT without collection_topics — so no
// transaction could be checked complete.
func (n topicNaming) mapped(topic string) bool {
	for _, t := range n.explicit {
		if t == topic {
			return true
		}
	}
	return strings.HasPrefix(topic, n.defaultPrefix) && len(topic) > len(n.defaultPrefix) && sanitizeTopicName(topic) == topic
}
