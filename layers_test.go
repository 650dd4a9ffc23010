package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The floors of ARCHITECTURE.md §2, from the ground up: internal/ (ground
// libraries) → the plugins and the emulator → components and the test kit →
// the commands → main. A package imports only from the floors below it (and
// its own subtree); a plugin never imports another plugin; kfake, a test
// double, is linked into no plugin, internal package or emulator, and not
// into the production binary. Only the non-test packages are held to it: a
// package's tests sit above every floor and may use the kit, the emulator or
// the plugins.

const module = "github.com/starrocks-txn/benthos-starrocks"

const kfake = "github.com/twmb/franz-go/pkg/kfake"

// layer names a package's floor and, for a plugin, which plugin it is.
type layer struct {
	floor  string // "internal", "plugin", "emulator", "components", "testkit", "commands", "main", "" (not ours, or a test-only package)
	plugin string // the plugin's directory (input/kafka_txn, …) for floor "plugin"
}

func layerOf(path string) layer {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return layer{}
	}
	rel = strings.TrimPrefix(rel, "/")
	first, rest, _ := strings.Cut(rel, "/")
	switch first {
	case "":
		return layer{floor: "main"}
	case "internal":
		return layer{floor: "internal"}
	case "input", "output", "processor", "metrics":
		name, _, _ := strings.Cut(rest, "/")
		return layer{floor: "plugin", plugin: first + "/" + name}
	case "emulator":
		return layer{floor: "emulator"}
	case "components":
		return layer{floor: "components"}
	case "testkit":
		return layer{floor: "testkit"}
	case "commands":
		return layer{floor: "commands"}
	}
	return layer{}
}

// forbidden says why pkg (of layer from) may not import imp (of layer to),
// or "" when it may.
func forbidden(pkg string, from layer, imp string, to layer) string {
	up := map[string][]string{
		"internal":   {"plugin", "emulator", "components", "testkit", "commands", "main"},
		"plugin":     {"emulator", "components", "testkit", "commands", "main"},
		"emulator":   {"plugin", "components", "testkit", "commands", "main"},
		"components": {"emulator", "testkit", "commands", "main"},
		"testkit":    {"commands", "main"},
		"commands":   {"main"},
	}
	switch {
	case slices.Contains(up[from.floor], to.floor):
		return fmt.Sprintf("%s (%s) imports %s (%s): packages depend downward only", pkg, from.floor, imp, to.floor)
	case from.floor == "plugin" && to.floor == "plugin" && from.plugin != to.plugin:
		return fmt.Sprintf("%s imports %s: a plugin never imports another plugin (what they share goes to internal/)", pkg, imp)
	}
	return ""
}

// listedPackage is what layers_test reads of `go list -json`.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// goList runs `go list -deps -json` with args and decodes its packages.
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, args...)...)
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("go list %v: %v\n%s", args, err, exitErr.Stderr)
	}
	require.NoError(t, err)
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// layerViolations are the broken rules of the module's non-test packages.
func layerViolations(pkgs []listedPackage) []string {
	var bad []string
	for _, p := range pkgs {
		from := layerOf(p.ImportPath)
		if from.floor == "" {
			continue
		}
		for _, imp := range p.Imports {
			if why := forbidden(p.ImportPath, from, imp, layerOf(imp)); why != "" {
				bad = append(bad, why)
			}
		}
		if (from.floor == "internal" || from.floor == "plugin" || from.floor == "emulator") && slices.Contains(p.Deps, kfake) {
			bad = append(bad, fmt.Sprintf("%s (%s) links kfake: the in-process Kafka is a test double, for the test kit and the commands that need it", p.ImportPath, from.floor))
		}
	}
	return bad
}

// Every package of the module keeps to its floor.
func TestPackagesDependDownwardOnly(t *testing.T) {
	pkgs := goList(t, "./...")
	ours := 0
	for _, p := range pkgs {
		if layerOf(p.ImportPath).floor != "" {
			ours++
		}
	}
	require.Greater(t, ours, 20, "go list saw the module's packages")
	assert.Empty(t, layerViolations(pkgs), "ARCHITECTURE.md §2: the floors")
}

// The rules catch what they are for: each kind of upward arrow, fed to the
// same check as the real graph.
func TestLayerRulesCatchEachViolation(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	for _, c := range []struct {
		name string
		pkg  listedPackage
		want string
	}{
		{"internal imports a plugin", listedPackage{ImportPath: m("internal/kafka"), Imports: []string{m("output/kafka_txn")}}, "packages depend downward only"},
		{"internal imports components", listedPackage{ImportPath: m("internal/docgen"), Imports: []string{m("components")}}, "packages depend downward only"},
		{"internal imports the emulator", listedPackage{ImportPath: m("internal/starrocks"), Imports: []string{m("emulator")}}, "packages depend downward only"},
		{"internal imports the test kit", listedPackage{ImportPath: m("internal/metricscap"), Imports: []string{m("testkit/workload")}}, "packages depend downward only"},
		{"internal imports a command", listedPackage{ImportPath: m("internal/exitstatus"), Imports: []string{m("commands/lint")}}, "packages depend downward only"},
		{"a plugin imports another", listedPackage{ImportPath: m("input/kafka_txn"), Imports: []string{m("output/starrocks_txn")}}, "a plugin never imports another plugin"},
		{"a plugin imports the emulator", listedPackage{ImportPath: m("output/starrocks_txn"), Imports: []string{m("emulator/store")}}, "packages depend downward only"},
		{"a plugin imports the test kit", listedPackage{ImportPath: m("processor/txn_assembler"), Imports: []string{m("testkit")}}, "packages depend downward only"},
		{"a plugin imports a command", listedPackage{ImportPath: m("metrics/prometheus"), Imports: []string{m("commands/demo")}}, "packages depend downward only"},
		{"the emulator imports a plugin", listedPackage{ImportPath: m("emulator/store"), Imports: []string{m("output/starrocks_txn")}}, "packages depend downward only"},
		{"the emulator imports the test kit", listedPackage{ImportPath: m("emulator"), Imports: []string{m("testkit/kafka")}}, "packages depend downward only"},
		{"the emulator imports a command", listedPackage{ImportPath: m("emulator"), Imports: []string{m("commands/bench")}}, "packages depend downward only"},
		{"the test kit imports a command", listedPackage{ImportPath: m("testkit/workload"), Imports: []string{m("commands/bench")}}, "packages depend downward only"},
		{"a plugin links kfake", listedPackage{ImportPath: m("input/debezium_txn"), Deps: []string{kfake}}, "links kfake"},
		{"internal links kfake", listedPackage{ImportPath: m("internal/kafka"), Deps: []string{kfake}}, "links kfake"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := layerViolations([]listedPackage{c.pkg})
			require.Len(t, bad, 1)
			assert.Contains(t, bad[0], c.want)
		})
	}
	// What is allowed stays allowed: a plugin's own subtree, internal from
	// anywhere, the kit over the emulator, the commands over all but main.
	assert.Empty(t, layerViolations([]listedPackage{
		{ImportPath: m("output/starrocks_txn"), Imports: []string{m("output/starrocks_txn/sub"), m("internal/starrocks")}},
		{ImportPath: m("testkit/emurig"), Imports: []string{m("emulator")}, Deps: []string{kfake}},
		{ImportPath: m("commands/demo"), Imports: []string{m("components"), m("testkit/kafka"), m("emulator")}, Deps: []string{kfake}},
		{ImportPath: m("components"), Imports: []string{m("output/kafka_txn"), m("input/kafka_txn")}},
	}))
}

// The production binary (go build -tags production .) links no kfake; the
// default one keeps the commands that run an in-process Kafka.
func TestProductionBuildLinksNoKfake(t *testing.T) {
	linked := func(tags ...string) bool {
		args := append(tags, ".")
		for _, p := range goList(t, args...) {
			if p.ImportPath == kfake {
				return true
			}
		}
		return false
	}
	assert.False(t, linked("-tags", "production"), "the production binary links %s", kfake)
	assert.True(t, linked(), "the default build keeps demo, bench and kafka, which run kfake")
}

// The production binary names the commands it leaves out, and says in one
// line how to get them.
func TestProductionBuildSaysWhatItLeavesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "benthos-starrocks")
	out, err := exec.Command("go", "build", "-tags", "production", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "building with -tags production: %s", out)
	for name, what := range map[string]string{
		"demo":    "the commands that run an in-process Kafka",
		"bench":   "the commands that run an in-process Kafka",
		"kafka":   "the commands that run an in-process Kafka",
		"produce": "the sample-data producer, a tool for local work",
	} {
		cmd := exec.Command(bin, name, "--partitions", "2")
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "%s fails in the production build: %s", name, out)
		assert.Equal(t, 1, exitErr.ExitCode())
		assert.Equal(t, name+" is not in this build: it was built with -tags production, which leaves out "+what+"; build without the tag (go build .) to run it\n", string(out))
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	require.NoError(t, err)
	assert.Regexp(t, `demo\s+not in this build`, string(help))
	assert.Contains(t, string(help), "emulator", "the production build keeps the emulator")
}
