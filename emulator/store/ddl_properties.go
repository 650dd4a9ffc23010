package store

import (
	"fmt"
	"sort"
	"strings"
)

// CREATE TABLE … PROPERTIES: StarRocks's FE analyses each property it knows and removes it
// from the map; whatever is left is refused ("Unknown properties: {k=v}", OlapTableFactory).
// The emulator accepts the properties StarRocks knows and ignores the physical ones (it has
// one replica of one tablet), except fast_schema_evolution, which decides how ALTER TABLE
// runs (schemachange.go). Property names are case-sensitive, as in StarRocks's map.

// fastSchemaEvolutionProp is the table property of fast schema evolution.
const fastSchemaEvolutionProp = "fast_schema_evolution"

// knownProperties are the CREATE TABLE properties StarRocks's PropertyAnalyzer takes
// (shared-nothing tables); knownPropertyPrefixes the families it takes by prefix.
var knownProperties = map[string]bool{
	"replication_num": true, "replication_allocation": true, "default.replication_num": true,
	"storage_medium": true, "storage_cooldown_time": true, "storage_cooldown_ttl": true,
	"storage_format": true, "storage_type": true, "storage_volume": true, "schema_version": true,
	"bloom_filter_columns": true, "bloom_filter_fpp": true, "colocate_with": true, "in_memory": true,
	"tablet_type": true, "enable_persistent_index": true, "persistent_index_type": true,
	"primary_index_cache_expire_sec": true, "compression": true, "replicated_storage": true,
	"write_quorum": true, "enable_async_write_back": true, "partition_live_number": true,
	"partition_ttl": true, "partition_ttl_number": true, "partition_retention_condition": true,
	"unique_constraints": true, "foreign_key_constraints": true, "bucket_size": true,
	"mutable_bucket_num": true, "enable_load_profile": true, "base_compaction_forbidden_time_ranges": true,
	"file_bundling": true, "compaction_strategy": true, "time_drift_constraint": true,
	"enable_dynamic_tablet": true, "lake_compaction_max_parallel": true,
	fastSchemaEvolutionProp: true,
}

var knownPropertyPrefixes = []string{"dynamic_partition.", "datacache.", "flat_json.", "binlog_", "binlog."}

// checkTableProperties takes fast_schema_evolution out of props (into ts) and refuses any
// property StarRocks does not know.
func checkTableProperties(ts *TableSchema, props [][2]string) ([][2]string, error) {
	var kept [][2]string
	var unknown []string
	for _, p := range props {
		k, v := p[0], p[1]
		switch {
		case k == fastSchemaEvolutionProp:
			// PropertyAnalyzer.analyzeUseFastSchemaEvolution: "true" or "false", any case.
			switch {
			case strings.EqualFold(v, "true"):
				ts.fse = true
			case strings.EqualFold(v, "false"):
				ts.fse = false
			default:
				return nil, fmt.Errorf("%s must be `true` or `false`", fastSchemaEvolutionProp)
			}
			ts.fseSet = true
			continue
		case knownProperties[k]:
		case hasKnownPrefix(k):
		default:
			unknown = append(unknown, k+"="+v)
		}
		kept = append(kept, p)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("Unknown properties: {%s}", strings.Join(unknown, ", "))
	}
	return kept, nil
}

func hasKnownPrefix(k string) bool {
	for _, p := range knownPropertyPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// printedProperties are the table's properties as SHOW CREATE TABLE prints them: the given
// ones and fast_schema_evolution, sorted by name (StarRocks prints its property map in key
// order).
func (sc *TableSchema) printedProperties() [][2]string {
	out := make([][2]string, 0, len(sc.properties)+1)
	out = append(out, sc.properties...)
	out = append(out, [2]string{fastSchemaEvolutionProp, fmt.Sprint(sc.fse)})
	sort.SliceStable(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
