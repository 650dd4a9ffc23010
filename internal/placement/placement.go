// Package placement judges where a txn_assembler processor is placed in a
// config: it must see every partition's messages in order, one call at a
// time. The project's lint (commands/lint) applies it to a whole config
// file, where it knows pipeline.threads; the processor applies it to the
// path Benthos built it at, so that every binary refuses what lint refuses
// (processor/txn_assembler/placement.go). One text for both.
package placement

import (
	"fmt"
	"strings"
)

// Assembler is the processor whose placement is judged.
const Assembler = "txn_assembler"

// Where is the reason common to every refusal.
const Where = "txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1"

// Judge returns why the assembler cannot run at path (a config path, one
// element per key or index, e.g. pipeline.processors.0), or "" when it can.
// threads is pipeline.threads; threadsKnown false when it cannot be told
// (an interpolation, or a processor that does not see the config), which a
// place under pipeline.processors then passes.
func Judge(path []string, threads int, threadsKnown bool) string {
	if len(path) == 0 {
		return ""
	}
	at := strings.Join(path, ".")
	switch root := path[0]; {
	case root == "input" || root == "input_resources":
		switch {
		case contains(path, "batching"):
			return fmt.Sprintf("%s: %s; here it is a batching policy's processor, which runs on a batch after it was cut", at, Where)
		case !direct(path):
			return fmt.Sprintf("%s: %s; here it is inside another processor, which may split, reorder or run its batches in parallel", at, Where)
		}
		return ""
	case root == "pipeline":
		if !direct(path) {
			return fmt.Sprintf("%s: %s; here it is inside another processor, which may split, reorder or run its batches in parallel", at, Where)
		}
		if !threadsKnown || threads == 1 {
			return ""
		}
		return fmt.Sprintf("%s: %s; here %s, so its calls overlap and it fails every message of the overlapping batches", at, Where, ThreadsIs(threads))
	case root == "processor_resources":
		return fmt.Sprintf("%s: %s; a processor resource can be used from any place, so its order cannot be checked: write txn_assembler itself under input.processors", at, Where)
	case root == "output" || root == "output_resources":
		return fmt.Sprintf("%s: %s; here it is an output's processor, which runs in as many concurrent calls as the output has in flight", at, Where)
	default:
		return fmt.Sprintf("%s: %s", at, Where)
	}
}

// ThreadsIs names a pipeline.threads value.
func ThreadsIs(threads int) string {
	if threads < 1 {
		return fmt.Sprintf("pipeline.threads is %d (one thread per CPU core)", threads)
	}
	return fmt.Sprintf("pipeline.threads is %d", threads)
}

// InPipeline reports whether path is a processor directly under
// pipeline.processors, where pipeline.threads decides.
func InPipeline(path []string) bool {
	return len(path) > 0 && path[0] == "pipeline" && direct(path)
}

// direct reports whether path is a processor of a processors list that is
// not inside another processor.
func direct(path []string) bool {
	n := 0
	for _, p := range path {
		if p == "processors" {
			n++
		}
	}
	return len(path) >= 2 && path[len(path)-2] == "processors" && n == 1
}

func contains(path []string, s string) bool {
	for _, p := range path {
		if p == s {
			return true
		}
	}
	return false
}
