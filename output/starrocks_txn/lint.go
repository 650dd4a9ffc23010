package starrocks_txn

import (
	"fmt"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// The lint rule of the spec and the start-time checks (validate and
// durationField) give the same text for the same mistake, so a config that
// `lint` passes starts, and one it refuses fails at start with the message
// the user already saw. A config built in code is not linted; validate
// catches it there. The only rule whose twin is elsewhere is the load URLs'
// form: starrocks.New refuses such a URL at construction (naming it,
// redacted), where the lint names its index and never prints it.
//
// The rule uses core Bloblang only: it is parsed when the plugin registers,
// possibly before any other plugin package has registered its methods.

// Defaults shared by the spec's fields and the lint rule.
const (
	defaultCommitInterval     = "1s"
	defaultTxnTimeout         = "600s"
	defaultRetryInitial       = "500ms"
	defaultRetryMax           = "30s"
	defaultSequenceGapTimeout = "10s"
	defaultRequestTimeout     = "60s"
	defaultLabelStateWait     = "60s"
	defaultUnknownCommit      = "30s"
	defaultMySQLTimeout       = "10s"
	defaultStallRetry         = "30s"
	defaultLabelPrefix        = "benthos"
)

// mysqlAddressPattern is host:port (a bracketed IPv6 host allowed), the form
// go-sql-driver/mysql dials; the port is checked to be 1 to 65535 beside it.
const mysqlAddressPattern = `^(\[[0-9A-Fa-f:.]+\]|[^\s\[\]:/@?#()]+):[0-9]{1,5}$`

var mysqlAddressRE = regexp.MustCompile(mysqlAddressPattern)

// labelPrefixPattern keeps labels within StarRocks's ^[-\w]{1,128}$ with room
// for the database and the writer's counter.
const labelPrefixPattern = `^[-A-Za-z0-9_]{1,64}$`

// progressTablePattern is a StarRocks table name the output can create its
// tables under (the writers table adds "_writers").
const progressTablePattern = `^[A-Za-z0-9_$-]{1,1000}$`

var progressTableRE = regexp.MustCompile(progressTablePattern)

// msgSchemaNeedsMySQLTail follows "schema_evolution: <mode>": the mode
// reads the tables' columns over mysql_address.
const msgSchemaNeedsMySQLTail = "reads the tables' columns over mysql_address, which is not set: set mysql_address (the FE's MySQL port, e.g. 127.0.0.1:9030), or set schema_evolution: ignore to load without checking (StarRocks then drops the fields a table has no column for, and nothing counts them)"

// msgStallRetry refuses a stall_retry_interval that is not positive.
const msgStallRetry = "stall_retry_interval must be positive"

func msgDuration(field, value string) string {
	return fmt.Sprintf("%s: %q is not a duration: give a number and a unit, e.g. 500ms or 10s", field, value)
}

// msgMySQLAddressCredentials refuses an address with userinfo (a DSN habit)
// without repeating it: the part before the '@' is a password.
const msgMySQLAddressCredentials = "credentials are not allowed in mysql_address; set username and password"

// msgMySQLAddress names a malformed address; one holding an '@' is never
// echoed (see msgMySQLAddressCredentials).
func msgMySQLAddress(addr string) string {
	if strings.Contains(addr, "@") {
		return msgMySQLAddressCredentials
	}
	return fmt.Sprintf("mysql_address %q must be host:port (e.g. fe:9030)", addr)
}

// msgDeadLetterBatchingTail follows the path of a batching policy found
// under dead_letter. The output hands each poisoned source transaction over
// as one batch and waits for it: a policy would hold it until enough other
// messages come (with no more dead letters, forever) and could split it.
const msgDeadLetterBatchingTail = ": a batching policy under dead_letter holds a poisoned source transaction back until the policy fills (possibly forever) and can split it; remove it: each source transaction is written as one batch"

// deadLetterBatching returns the path (dead_letter.…batching) of every
// non-empty batching policy in the dead_letter config v (decoded YAML),
// sorted: the start-time twin of the lint rule's check.
func deadLetterBatching(v any) []string {
	var paths []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				p := path + "." + k
				if k == "batching" && !emptyPolicy(c) {
					paths = append(paths, p)
					continue
				}
				walk(p, c)
			}
		case []any:
			for i, c := range n {
				walk(path+"."+strconv.Itoa(i), c)
			}
		}
	}
	walk(fieldDeadLetter, v)
	sort.Strings(paths)
	return paths
}

// emptyPolicy reports whether a batching object sets nothing (a generated
// config writes the zero policy out in full).
func emptyPolicy(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return v == nil
	}
	for _, f := range m {
		switch x := f.(type) {
		case nil:
		case int:
			if x != 0 {
				return false
			}
		case float64:
			if x != 0 {
				return false
			}
		case string:
			if x != "" {
				return false
			}
		case []any:
			if len(x) != 0 {
				return false
			}
		case map[string]any:
			if len(x) != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func msgLabelPrefix(p string) string {
	return fmt.Sprintf("label_prefix %q must be 1 to 64 letters, digits, _ or -", p)
}

func msgProgressTable(t string) string {
	return fmt.Sprintf("progress_table %q must be 1 to 1000 letters, digits, _, - or $", t)
}

const (
	msgCommitIntervalPositive = "commit_interval must be positive"
	msgTxnTimeoutMin          = "txn_timeout must be at least 1s"
	msgCommitVsTimeout        = "commit_interval must be at most half of txn_timeout: lower commit_interval or raise txn_timeout"
	msgBufferSize             = "buffer_size must be at least 1 (bytes)"
	msgMaxInFlight            = "max_in_flight must be at least 1"
	msgMaxDatabases           = "max_databases must be at least 1"
	msgRetryBackoff           = "retry_backoff: initial_interval must be positive and not above max_interval"
	msgSequenceGap            = "sequence_gap_timeout must be positive"
	msgUnknownCommit          = "unknown_commit_timeout must be positive"
	msgMySQLTimeout           = "mysql_timeout must be positive"
	msgTableProperties        = "table_properties: every entry needs a database and a table"
)

// validMySQLAddress reports whether addr is host:port with a port of 1 to
// 65535.
func validMySQLAddress(addr string) bool {
	if !mysqlAddressRE.MatchString(addr) {
		return false
	}
	port, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	return err == nil && port >= 1 && port <= 65535
}

// durationField reads a duration field, refusing a value without a unit
// with the lint rule's text.
func durationField(conf *service.ParsedConfig, path ...string) (time.Duration, error) {
	s, err := conf.FieldString(path...)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s", msgDuration(strings.Join(path, "."), s))
	}
	return d, nil
}

// lintRule is the spec's lint rule: every value check of validate, in the
// same words.
var lintRule = `
# A Go duration in nanoseconds, or null when the text is not one (the grammar
# of time.ParseDuration).
map dur_ns {
  let s = this.string()
  let sign = if $s.has_prefix("-") { -1 } else { 1 }
  let body = $s.re_replace_all("""^[-+]""", "")
  root = if $body == "0" { 0 } else if $body.re_match("""^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$""") {
    $sign * $body.re_find_all_submatch("""([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)""").map_each(p -> p.index(1).number() * match p.index(2) {
      "ns" => 1
      "ms" => 1000000
      "s" => 1000000000
      "m" => 60000000000
      "h" => 3600000000000
      _ => 1000
    }).sum()
  } else { null }
}

map dur_err {
  let ns = if this.value == null { 0 } else { this.value.apply("dur_ns") }
  root = if $ns == null || $ns > 9223372036854775807 || $ns < -9223372036854775807 {
    "%s: %q is not a duration: give a number and a unit, e.g. 500ms or 10s".format(this.name, this.value.string())
  } else { null }
}

map url_err {
  let u = this.value.string().trim().parse_url().catch(null)
  root = if $u == null { "load_urls[%d]: not a valid URL; use http://host:8030".format(this.index) } else if !["http", "https"].contains($u.scheme) {
    "load_urls[%d]: scheme must be http or https (e.g. http://fe:8030)".format(this.index)
  } else if $u.host == "" {
    "load_urls[%d]: no host (e.g. http://fe:8030)".format(this.index)
  } else if $u.user != null {
    "load_urls[%d]: credentials in the URL are not allowed; set username and password instead".format(this.index)
  } else if $u.raw_query != "" || $u.fragment != "" {
    "load_urls[%d]: a load URL takes no query or fragment".format(this.index)
  } else { null }
}

# A literal database or table name (no interpolation) checked with the
# texts of starrocks.ValidateName, prefixed by the field.
map name_err {
  let s = this.value.string()
  let rest = $s.re_replace_all("""^[A-Za-z0-9_$-]*""", "")
  let shown = if $s.length() > 80 { $s.slice(0, 80) + "…" } else { $s }
  let c = $rest.re_find_all("(?s)^.").index(0).catch("")
  let q = "'" + "%q".format($c).slice(1, -1) + "'"
  let at = $s.length() - $rest.length()
  let n = $s.re_find_all("(?s).").length()
  root = if this.value == null || $s.contains("${!") { null } else if $s == "" {
    "%s: invalid %s name: it is empty; set a %s name of letters, digits, '_', '-' or '$'".format(this.field, this.kind, this.kind)
  } else if $n > this.limit {
    "%s: invalid %s name %q: %d characters, StarRocks allows at most %d".format(this.field, this.kind, $shown, $n, this.limit)
  } else if $rest != "" && $c.re_match("""^[\x00-\x1f\x7f]$""") {
    "%s: invalid %s name %q: control character %s at byte %d (CR/LF and other control characters would corrupt the HTTP request); use letters, digits, '_', '-' or '$'".format(this.field, this.kind, $shown, $q, $at)
  } else if $rest != "" {
    "%s: invalid %s name %q: character %s at byte %d is not allowed; use letters, digits, '_', '-' or '$'".format(this.field, this.kind, $shown, $q, $at)
  } else { null }
}

# Every non-empty batching policy under dead_letter, by its path.
let dl_batching = this.dead_letter.or({}).collapse().key_values().filter(kv -> kv.key.re_match("""^(.*\.)?batching\.(count|byte_size|period|check|processors)(\..*)?$""") && !(kv.value == null || kv.value == 0 || kv.value == "" || kv.value == [] || kv.value == {})).map_each(kv -> "dead_letter." + kv.key.re_replace_all("""^((.*\.)?batching)\..*$""", "$1")).unique().sort().map_each(p -> p + "` + msgDeadLetterBatchingTail + `")

let reserved = ["label", "db", "table", "transaction_type", "timeout", "authorization", "expect", "content-length", "content-type", "host", "transfer-encoding", "connection"]
let compression = this.compression.or("none")
let hdrs = this.load_properties.or({}).key_values().sort_by(kv -> kv.key).map_each(kv -> {"where": "load_properties", "key": kv.key, "value": kv.value}).merge(
  this.table_properties.or([]).map_each(tp -> tp.properties.or({}).key_values().sort_by(kv -> kv.key).map_each(kv -> {"where": "table_properties %s.%s".format(tp.database.or(""), tp.table.or("")), "key": kv.key, "value": kv.value})).flatten())
let hdr_errs = $hdrs.map_each(h -> if $reserved.contains(h.key.lowercase()) {
  "%s: header %s is set by the output itself and cannot be a load property".format(h.where, h.key)
} else if $compression != "none" && ["compression", "content-encoding"].contains(h.key.lowercase()) {
  "%s: header %s conflicts with compression %s: set only one".format(h.where, h.key, $compression)
} else if h.key.lowercase() == "format" && h.value.string().lowercase() != "json" {
  "%s: format %s is not supported: the output loads JSON rows".format(h.where, h.value.string())
} else if h.key.lowercase() == "enable_merge_commit" {
  "%s: enable_merge_commit is incompatible with multi-table transactions: remove it".format(h.where)
} else if h.key.lowercase() == "where" {
  "%s: a where header drops rows of a source transaction and breaks its atomicity: filter with a processor instead".format(h.where)
} else { null })

let dur_errs = [
  {"name": "commit_interval", "value": this.commit_interval},
  {"name": "txn_timeout", "value": this.txn_timeout},
  {"name": "retry_backoff.initial_interval", "value": this.retry_backoff.initial_interval},
  {"name": "retry_backoff.max_interval", "value": this.retry_backoff.max_interval},
  {"name": "sequence_gap_timeout", "value": this.sequence_gap_timeout},
  {"name": "request_timeout", "value": this.request_timeout},
  {"name": "label_state_wait", "value": this.label_state_wait},
  {"name": "unknown_commit_timeout", "value": this.unknown_commit_timeout},
  {"name": "mysql_timeout", "value": this.mysql_timeout},
  {"name": "stall_retry_interval", "value": this.stall_retry_interval},
].map_each(d -> d.apply("dur_err"))
let ci = this.commit_interval.or("` + defaultCommitInterval + `").apply("dur_ns")
let tt = this.txn_timeout.or("` + defaultTxnTimeout + `").apply("dur_ns")
let ri = this.retry_backoff.initial_interval.or("` + defaultRetryInitial + `").apply("dur_ns")
let rm = this.retry_backoff.max_interval.or("` + defaultRetryMax + `").apply("dur_ns")
let sg = this.sequence_gap_timeout.or("` + defaultSequenceGapTimeout + `").apply("dur_ns")
let uc = this.unknown_commit_timeout.or("` + defaultUnknownCommit + `").apply("dur_ns")
let mt = this.mysql_timeout.or("` + defaultMySQLTimeout + `").apply("dur_ns")
let sr = this.stall_retry_interval.or("` + defaultStallRetry + `").apply("dur_ns")
let schemaMode = this.schema_evolution.or("` + schemasync.ModeEvolve + `").string()

let semantic = this.semantic.or("` + semanticAtLeastOnce + `")
let pid = this.pipeline_id.or("").string()
let mysql = this.mysql_address.or("").string()
let track = $mysql != "" && ($semantic == "` + semanticExactlyOnce + `" || $pid != "")
let prefix = this.label_prefix.or("` + defaultLabelPrefix + `").string()
let progress = this.progress_table.or("` + defaultProgressTable + `").string()
let urls = this.load_urls.or([])
` + lintMode + `
root = [
  if $urls.length() == 0 { "load_urls must list at least one StarRocks FE address, e.g. http://127.0.0.1:8030" } else { null },
  if this.table_properties.or([]).any(tp -> tp.database.or("") == "" || tp.table.or("") == "") { "` + msgTableProperties + `" } else { null },
  if $ci != null && $ci <= 0 { "` + msgCommitIntervalPositive + `" } else { null },
  if $tt != null && $tt < 1000000000 { "` + msgTxnTimeoutMin + `" } else { null },
  if $ci != null && $tt != null && $ci > 0 && $tt >= 1000000000 && $ci * 2 > $tt { "` + msgCommitVsTimeout + `" } else { null },
  if this.buffer_size.or(1).number().catch(1) < 1 { "` + msgBufferSize + `" } else { null },
  if this.max_in_flight.or(1).number().catch(1) < 1 { "` + msgMaxInFlight + `" } else { null },
  if this.max_databases.or(1).number().catch(1) < 1 { "` + msgMaxDatabases + `" } else { null },
  if $ri != null && $rm != null && ($ri <= 0 || $rm < $ri) { "` + msgRetryBackoff + `" } else { null },
  if $sg != null && $sg <= 0 { "` + msgSequenceGap + `" } else { null },
  if $uc != null && $uc <= 0 { "` + msgUnknownCommit + `" } else { null },
  if $mt != null && $mt <= 0 { "` + msgMySQLTimeout + `" } else { null },
  if $sr != null && $sr <= 0 { "` + msgStallRetry + `" } else { null },
  if $schemaMode != "` + schemasync.ModeIgnore + `" && $mysql == "" { "schema_evolution: %s (the default is evolve) ` + msgSchemaNeedsMySQLTail + `".format($schemaMode) } else { null },
  if $track && $pid.length() > ` + strconv.Itoa(maxPipelineID) + ` { "pipeline_id %q is longer than %d characters".format($pid, ` + strconv.Itoa(maxPipelineID) + `) } else { null },
  if $semantic == "` + semanticExactlyOnce + `" && $pid == "" { "semantic exactly_once needs pipeline_id: it names this pipeline's rows in the progress table" } else { null },
  if $semantic == "` + semanticExactlyOnce + `" && $mysql == "" { "semantic exactly_once needs mysql_address: the progress table is created and read over the FE MySQL protocol" } else { null },
  if !$progress.re_match("""` + progressTablePattern + `""") { "progress_table %q must be 1 to 1000 letters, digits, _, - or $".format($progress) } else { null },
  if !$prefix.re_match("""` + labelPrefixPattern + `""") { "label_prefix %q must be 1 to 64 letters, digits, _ or -".format($prefix) } else { null },
  if $mysql.contains("@") { "` + msgMySQLAddressCredentials + `" } else if $mysql != "" && !($mysql.re_match("""` + mysqlAddressPattern + `""") && $mysql.split(":").index(-1).number().catch(0) >= 1 && $mysql.split(":").index(-1).number().catch(0) <= 65535) {
    "mysql_address %q must be host:port (e.g. fe:9030)".format($mysql)
  } else { null },
].merge($dur_errs).merge($dl_batching).merge([
  {"field": "database", "kind": "database", "value": this.database, "limit": 256},
  {"field": "table", "kind": "table", "value": this.table, "limit": 1024},
].map_each(n -> n.apply("name_err"))).merge($urls.enumerated().map_each(e -> e.apply("url_err"))).merge($hdr_errs).merge($mode_errs).filter(v -> v != null)
`

// rawLiteral returns the raw text of an interpolated name field when it
// holds no interpolation, nil when it does.
func rawLiteral(conf *service.ParsedConfig, field string) (*string, error) {
	s, err := conf.FieldString(field)
	if err != nil {
		return nil, err
	}
	if strings.Contains(s, "${!") {
		return nil, nil
	}
	return &s, nil
}

// metaRefRE finds the metadata keys an interpolation reads: `@key`,
// `meta("key")` and `metadata("key")`.
var metaRefRE = regexp.MustCompile(`@([A-Za-z0-9_]+)|\bmeta(?:data)?\("([^"]+)"\)`)

// metaKeysOf returns the metadata keys the interpolated field reads, so a
// message that lacks one is refused naming it (and what stamps it) instead
// of being sent to a database or table called "null".
func metaKeysOf(conf *service.ParsedConfig, field string) ([]string, error) {
	s, err := conf.FieldString(field)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, m := range metaRefRE.FindAllStringSubmatch(s, -1) {
		k := m[1] + m[2]
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// missingMetaErr is the poison of a message that lacks a metadata key the
// field's interpolation reads; nil when it has them all.
func missingMetaErr(msg *service.Message, field string, keys []string) error {
	for _, k := range keys {
		if _, ok := msg.MetaGetMut(k); ok {
			continue
		}
		if strings.HasPrefix(k, "starrocks_") {
			return fmt.Errorf("%s reads metadata %s, which the message does not have: add the txn_assembler processor under input.processors (it stamps the metadata contract), or set %s", field, k, field)
		}
		return fmt.Errorf("%s reads metadata %s, which the message does not have: set it upstream, or change %s", field, k, field)
	}
	return nil
}
