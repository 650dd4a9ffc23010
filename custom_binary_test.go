package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// readmeBlock returns the code block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), marker)
	require.True(t, ok, "README.md has %q", marker)
	_, block, ok := strings.Cut(after, "```sh\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "\n```")
	require.True(t, ok)
	return block
}

// The README's recipe for a custom binary, run as written in a temporary
// directory — `go mod init`, the main.go it shows, the replace directive to
// the clone, `go mod tidy`, `go build` and its `lint` — with this checkout
// as the clone (a symbolic link instead of `git clone`), through the module
// proxy and cache only (GOFLAGS=-mod=mod). The binary it gives lints every
// shipped config, runs one against the emulator, and refuses a misplaced
// txn_assembler though its lint is Benthos's own.
func TestCustomBinaryFromTheREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary in a module of its own (about a minute)")
	}
	repo, err := filepath.Abs(".")
	require.NoError(t, err)
	block := readmeBlock(t, "<!-- TestCustomBinaryFromTheREADME")
	first, rest, ok := strings.Cut(block, "\n")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(first, "git clone "), "the recipe starts from a clone: %s", first)
	require.Contains(t, rest, "components/all", "the recipe imports what the shipped configs need")
	require.Contains(t, rest, "-replace=github.com/starrocks-txn/benthos-starrocks=../benthos-starrocks")

	dir := t.TempDir()
	require.NoError(t, os.Symlink(repo, filepath.Join(dir, "benthos-starrocks")))
	script := "set -euo pipefail\n" + rest + "\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's recipe:\n%s", out)
	bin := filepath.Join(dir, "mybinary", "mybinary")
	require.FileExists(t, bin)

	// Every shipped config lints clean with it.
	var shipped []string
	for f := range endToEnd {
		shipped = append(shipped, filepath.Join(repo, f))
	}
	lint := exec.Command(bin, append([]string{"lint"}, shipped...)...)
	out, err = lint.CombinedOutput()
	assert.NoError(t, err, "%s", out)

	// A shipped config runs with it: examples/envelope_file.yaml (the file
	// input, the lines scanner: Benthos's io and pure) into the emulator.
	em := emurig.Start(t, emulator.Config{Schema: emurig.ExampleSchema(t), MySQLAddr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "-c", "examples/envelope_file.yaml")
	run.Dir = repo
	run.Env = append(os.Environ(), "STARROCKS_LOAD_URL="+em.FEURL(), "STARROCKS_MYSQL_ADDRESS="+em.MySQLAddr())
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, []string{"1|20|shipped", "2|199|created"}, rows(t, em, "orders", "order_id", "total_amount", "order_status"))

	// A misplaced assembler: Benthos's lint passes it, the processor
	// refuses it. An output's processor stops the start (status 1) ...
	dir2 := t.TempDir()
	write := func(name, conf string) string {
		p := filepath.Join(dir2, name)
		require.NoError(t, os.WriteFile(p, []byte(conf), 0o644))
		return p
	}
	gen := "http:\n  enabled: false\ninput:\n  generate:\n    interval: 10ms\n    mapping: 'root = {\"partition\":0,\"txnId\":\"t\",\"type\":\"TXN_BEGIN\"}'\n"
	outProc := write("output.yaml", gen+"output:\n  drop: {}\n  processors:\n    - txn_assembler: {}\n")
	out, err = exec.CommandContext(ctx, bin, "-c", outProc).CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "%s", out)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Contains(t, string(out), "output.processors.0: txn_assembler must see every partition's messages in order")

	// ... and pipeline.threads: 2 holds every call with the fix named.
	threads := write("threads.yaml", gen+"pipeline:\n  threads: 2\n  processors:\n    - txn_assembler: {}\noutput:\n  drop: {}\nshutdown_timeout: 2s\n")
	lint = exec.Command(bin, "lint", threads)
	out, err = lint.CombinedOutput()
	require.NoError(t, err, "Benthos's own lint does not see the placement: %s", out)
	var logs testlog.Buffer
	held := exec.CommandContext(ctx, bin, "-c", threads)
	held.Stdout, held.Stderr = &logs, &logs
	require.NoError(t, held.Start())
	want := "txn_assembler refuses to run here: pipeline.processors.0: txn_assembler must see every partition's messages in order"
	testkit.Poll(time.Minute, func() bool { return strings.Contains(logs.String(), want) })
	require.NoError(t, held.Process.Signal(os.Interrupt))
	_ = held.Wait()
	assert.Contains(t, logs.String(), want, fmt.Sprintf("the refusal is logged:\n%s", logs.String()))
}
