// This file builds a Processor from its parsed configuration: the format,
// the custom mappings and the instance tag stamped as starrocks_seq_source.

package txnassembler

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

func newFromConfig(conf *service.ParsedConfig, mgr *service.Resources) (*Processor, error) {
	p := &Processor{parts: map[string]*partState{}, fast: &fastDecoder{}}
	format, err := conf.FieldString(fieldFormat)
	if err != nil {
		return nil, err
	}
	var custom *customMappings
	switch format {
	case formatEnvelope:
		p.decode, p.txnField = p.fast.envelope, "txnId"
	case formatMaxwell:
		p.decode, p.txnField = p.fast.maxwell, "xid"
	case formatCustom:
		if custom, err = customFromConfig(conf.Namespace(fieldCustom)); err != nil {
			return nil, err
		}
		p.decode, p.txnField = custom.decode, "custom.txn_id"
	default:
		return nil, fmt.Errorf("format must be envelope, maxwell or custom, got %q", format)
	}
	if isSet(conf, fieldPartition) {
		if p.partition, err = conf.FieldInterpolatedString(fieldPartition); err != nil {
			return nil, err
		}
	}
	if isSet(conf, fieldSourceOffset) {
		if p.sourceOffset, err = conf.FieldInterpolatedString(fieldSourceOffset); err != nil {
			return nil, err
		}
	}
	if conf.Contains(fieldTableMapping) {
		if p.tableMapping, err = conf.FieldStringMap(fieldTableMapping); err != nil {
			return nil, err
		}
		for k, v := range p.tableMapping {
			if strings.TrimSpace(v) == "" || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("table_mapping entry %q: %q: source and target must not be empty", k, v)
			}
			if err := checkMappingTarget(k, v); err != nil {
				return nil, err
			}
		}
	}
	if isSet(conf, fieldDatabase) {
		if p.database, err = conf.FieldString(fieldDatabase); err != nil {
			return nil, err
		}
		if strings.TrimSpace(p.database) == "" {
			return nil, errors.New(errBlankDatabase)
		}
	}
	instance := ""
	if isSet(conf, fieldInstanceID) {
		if instance, err = conf.FieldString(fieldInstanceID); err != nil {
			return nil, err
		}
	}
	if p.seqSource, err = newSeqSource(instance); err != nil {
		return nil, err
	}
	p.log = mgr.Logger()
	// Refuse a place where partitions cannot be seen in order: now when the
	// place alone says so, at the first call for pipeline.threads
	// (placement.go).
	if p.placed, err = newPlacementGuard(componentPath(mgr), p.log); err != nil {
		return nil, err
	}
	p.m = newMetrics(mgr.Metrics())
	p.reg = registry.Get(mgr)
	p.reg.OnFence(p.Reset)
	p.registerEnds(format, custom)
	return p, nil
}

func customFromConfig(conf *service.ParsedConfig) (*customMappings, error) {
	var c customMappings
	var err error
	for _, f := range []struct {
		name string
		dst  **bloblang.Executor
	}{
		{fieldCustomKind, &c.kind},
		{fieldCustomTxnID, &c.txnID},
		{fieldCustomDB, &c.database},
		{fieldCustomTable, &c.table},
		{fieldCustomRow, &c.row},
		{fieldCustomDelete, &c.del},
		{fieldCustomSchema, &c.schema},
	} {
		if *f.dst, err = conf.FieldBloblang(f.name); err != nil {
			return nil, fmt.Errorf("parsing custom.%s: %w", f.name, err)
		}
	}
	return &c, nil
}

// newSeqSource makes the instance tag: the optional instance id, a dash and
// 12 random hex characters.
func newSeqSource(instance string) (string, error) {
	b := make([]byte, seqSourceRandomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the instance tag: %w", err)
	}
	tag := hex.EncodeToString(b)
	if instance != "" {
		tag = instance + "-" + tag
	}
	return tag, nil
}
