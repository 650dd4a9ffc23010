package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ARCHITECTURE.md kept true (ARCHITECTURE.md §11, the conventions of the
// guarantee map; §9, the file tables). checkArchitecture reads the document
// and the tree under root and names every reference that went stale:
//
//   - a test the guarantee map names that no `_test.go` file of its package
//     declares (a prefix with `*`: none declared);
//   - a `file.go:func` (or `file.go:Type.method`) that is not declared in that
//     file, a `file.go` that does not exist;
//   - a row without a home (a `file.go:func` first in its "enforced in"
//     cell) or without a test, an elided test name (`…Suffix`);
//   - a plugin package (a directory under input/, output/ or processor/ with a
//     non-test Go file) that is no row's home, or has no file table in §9;
//   - a name given beside a reference (`apply` (`complete`)) that is no
//     identifier of that reference's package any more;
//   - a file table naming or citing a file that does not exist, or leaving
//     out a non-test Go file of its package; a path of §9's first table
//     that does not exist;
//   - an `ARCHITECTURE.md §n` citation anywhere in the repo to a section the
//     document does not have.

const architectureFile = "ARCHITECTURE.md"

// The markers a test name may carry in the guarantee map (`[sr] TestX`):
// these abbreviations, or else a package directory relative to the module
// root or to the subsection's home package.
var testMarkers = map[string]string{
	"sr":   "internal/starrocks",
	"emu":  "output/starrocks_txn",
	"root": ".",
}

// The top folders of the plugins (ARCHITECTURE.md §2, floor 2).
var pluginRoots = []string{"input", "output", "processor"}

var (
	headingRE   = regexp.MustCompile(`^(#{2,3}) (\d+(?:\.\d+)*)\.? `)
	packagesRE  = regexp.MustCompile("^Packages: home `([^`]+)`, unit tests `([^`]+)`, end-to-end tests `([^`]+)`\\.?\\s*$")
	codeSpanRE  = regexp.MustCompile("`([^`]+)`")
	bareNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*$`)
	fileRefRE   = regexp.MustCompile(`^((?:[\w.-]+/)*)([\w-]+\.go)(?::(\w+)(?:\.(\w+))?)?$`)
	testNameRE  = regexp.MustCompile(`^(?:\[([^\]]+)\] )?((?:Test|Fuzz|Benchmark|Example)\w*)(\*)?(/\S*)?$`)
	markedRE    = regexp.MustCompile(`^\[([^\]]+)\] `)
	citationRE  = regexp.MustCompile(`ARCHITECTURE\.md §(\d+(?:\.\d+)*)`)
	mapHeader   = "| guarantee | enforced in | unit test | end-to-end test |"
	fileHeader  = "| file | what lives there |"
	pathsHeader = "| path | what lives there |"
)

// archReport is what checkArchitecture found: the problems, and the figures
// the test logs.
type archReport struct {
	problems []string
	rows     int // rows of the guarantee map
	enforced int // rows with a home and tests, every reference checked
	tests    int // test names checked
	refs     int // file.go and file.go:func references checked
	names    int // names given as prose beside them, checked
}

func (r *archReport) addf(line int, format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf("%s:%d: %s", architectureFile, line, fmt.Sprintf(format, args...)))
}

// goPackage is what the checker needs of one directory's Go files.
type goPackage struct {
	files map[string]map[string]bool // file → declared funcs: "name" and "Type.name"
	tests map[string]bool            // top-level funcs of the _test.go files
	words map[string]bool            // every identifier of the non-test files
}

type archChecker struct {
	root string
	pkgs map[string]*goPackage // by directory relative to root
	rep  archReport
}

func (c *archChecker) pkg(dir string) *goPackage {
	if p, ok := c.pkgs[dir]; ok {
		return p
	}
	p := &goPackage{files: map[string]map[string]bool{}, tests: map[string]bool{}, words: map[string]bool{}}
	c.pkgs[dir] = p
	entries, err := os.ReadDir(filepath.Join(c.root, dir))
	if err != nil {
		return p
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		decls := map[string]bool{}
		p.files[e.Name()] = decls
		f, err := parser.ParseFile(fset, filepath.Join(c.root, dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // a file that does not parse declares nothing; go vet names it
		}
		if !strings.HasSuffix(e.Name(), "_test.go") {
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					p.words[id.Name] = true
				}
				return true
			})
		}
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					decls[s.(*ast.TypeSpec).Name.Name] = true
				}
				continue
			}
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			decls[fd.Name.Name] = true
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				if recv := receiverType(fd.Recv.List[0].Type); recv != "" {
					decls[recv+"."+fd.Name.Name] = true
				}
			} else if strings.HasSuffix(e.Name(), "_test.go") {
				p.tests[fd.Name.Name] = true
			}
		}
	}
	return p
}

func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func (c *archChecker) isDir(rel string) bool {
	st, err := os.Stat(filepath.Join(c.root, rel))
	return err == nil && st.IsDir()
}

// resolveDir is the directory a path prefix names: from the module root when
// its first element is a top folder there, else from the home package.
func (c *archChecker) resolveDir(prefix, home string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return home
	}
	if first, _, _ := strings.Cut(prefix, "/"); c.isDir(first) && !c.isDir(filepath.Join(home, first)) {
		return prefix
	}
	return filepath.ToSlash(filepath.Join(home, prefix))
}

// splitCells splits a Markdown table row on the pipes outside code spans.
func splitCells(line string) []string {
	var cells []string
	var b strings.Builder
	inCode := false
	for _, r := range strings.TrimSpace(line) {
		switch {
		case r == '`':
			inCode = !inCode
			b.WriteRune(r)
		case r == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	cells = append(cells, strings.TrimSpace(b.String()))
	// A row starts and ends with a pipe: drop the empty cells outside them.
	if len(cells) > 0 && cells[0] == "" {
		cells = cells[1:]
	}
	if len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	return cells
}

func codeSpans(cell string) []string {
	var spans []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(cell, -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// checkFileRef checks one `file.go` or `file.go:func` reference; it returns
// the directory of the file, and whether the reference names a function.
func (c *archChecker) checkFileRef(line int, m []string, home, last string) (dir string, isFunc bool) {
	dir = last
	if m[1] != "" {
		dir = c.resolveDir(m[1], home)
	}
	file, name, method := m[2], m[3], m[4]
	c.rep.refs++
	decls, ok := c.pkg(dir).files[file]
	if !ok {
		c.rep.addf(line, "`%s`: no file %s", m[0], filepath.ToSlash(filepath.Join(dir, file)))
		return dir, name != ""
	}
	if name == "" {
		return dir, false
	}
	want := name
	if method != "" {
		want = name + "." + method
	}
	if !decls[want] {
		c.rep.addf(line, "`%s`: %s declares no func or type %s", m[0], filepath.ToSlash(filepath.Join(dir, file)), want)
	}
	return dir, true
}

// checkBareName checks a name the cell gives as prose about the reference
// before it (`partition.go:apply` (`complete`), `cycle.tainted`): each of
// its parts is still an identifier somewhere in that package's non-test
// files. Names with an underscore (config fields) are not Go names here.
func (c *archChecker) checkBareName(line int, span, dir string) {
	words := c.pkg(dir).words
	for _, part := range strings.Split(span, ".") {
		if !words[part] {
			c.rep.addf(line, "`%s`: %s is no identifier of %s", span, part, dir)
			return
		}
	}
	c.rep.names++
}

// checkTests checks the test names of one cell; it returns how many it checked.
func (c *archChecker) checkTests(line int, cell, defaultPkg, home string) int {
	n := 0
	for _, span := range codeSpans(cell) {
		name := span
		if mk := markedRE.FindStringSubmatch(span); mk != nil {
			name = span[len(mk[0]):]
		}
		if strings.HasPrefix(name, "…") || strings.HasPrefix(name, "...") {
			c.rep.addf(line, "`%s`: an elided test name cannot be checked; write it whole", span)
			continue
		}
		m := testNameRE.FindStringSubmatch(span)
		if m == nil {
			continue // a helper, a subtest's tag, a field: prose
		}
		pkg := defaultPkg
		if m[1] != "" {
			var ok bool
			if pkg, ok = testMarkers[m[1]]; !ok {
				pkg = c.resolveDir(m[1]+"/", home)
				if !c.isDir(pkg) {
					c.rep.addf(line, "`%s`: no package %s", span, m[1])
					continue
				}
			}
		}
		n++
		tests := c.pkg(pkg).tests
		if m[3] == "*" {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(tests)), func(t string) bool { return strings.HasPrefix(t, m[2]) }) {
				c.rep.addf(line, "`%s`: no test of %s starts with %s", span, pkg, m[2])
			}
			continue
		}
		if !tests[m[2]] {
			c.rep.addf(line, "`%s`: no func %s( in the _test.go files of %s", span, m[2], pkg)
		}
	}
	return n
}

// pluginPackages lists the directories under the plugin roots holding a
// non-test Go file.
func pluginPackages(root string) ([]string, error) {
	var pkgs []string
	for _, top := range pluginRoots {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, _ := filepath.Rel(root, filepath.Dir(path))
				if rel = filepath.ToSlash(rel); !slices.Contains(pkgs, rel) {
					pkgs = append(pkgs, rel)
				}
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	slices.Sort(pkgs)
	return pkgs, nil
}

func checkArchitecture(root, doc string) (archReport, error) {
	c := &archChecker{root: root, pkgs: map[string]*goPackage{}}
	lines := strings.Split(doc, "\n")

	sections := map[string]bool{}
	for _, l := range lines {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			sections[m[2]] = true
		}
	}

	homes := map[string]bool{}                 // packages homing a row of the map
	fileTables := map[string]map[string]bool{} // package → the files its §9 table lists

	var (
		top, sub       string // the current "## n." and "### n.m" numbers
		subPkg         string // the package of the current §9 subsection
		packages       []string
		inTable        string // mapHeader, fileHeader or pathsHeader while in one
		tableHasHeader bool
	)
	for i, l := range lines {
		n := i + 1
		if m := headingRE.FindStringSubmatch(l); m != nil {
			if m[1] == "##" {
				top, sub = m[2], ""
			} else {
				sub = m[2]
			}
			subPkg, packages, inTable = "", nil, ""
			if top == "9" && sub != "" {
				for _, span := range codeSpans(l) {
					if strings.HasSuffix(span, "/") {
						subPkg = strings.TrimSuffix(span, "/")
					}
				}
			}
			continue
		}
		if m := packagesRE.FindStringSubmatch(l); m != nil && top == "11" {
			packages = m[1:]
			continue
		}
		if !strings.HasPrefix(l, "|") {
			inTable = ""
			continue
		}
		if inTable == "" {
			switch strings.TrimSpace(l) {
			case mapHeader, fileHeader, pathsHeader:
				inTable, tableHasHeader = strings.TrimSpace(l), false
			}
			if inTable == "" && (top == "9" || top == "11") {
				c.rep.addf(n, "a table row without its header (a table split by a blank line, or not a table this test reads: %q, %q, %q): its rows would go unchecked", mapHeader, fileHeader, pathsHeader)
			}
			if inTable != "" && inTable != mapHeader && top == "11" {
				c.rep.addf(n, "a table in §11 that is not a guarantee map table (%s)", mapHeader)
			}
			if inTable == mapHeader && top != "11" {
				c.rep.addf(n, "a guarantee map table outside §11")
			}
			if inTable == mapHeader && packages == nil {
				c.rep.addf(n, "a guarantee map table without a `Packages: home …, unit tests …, end-to-end tests ….` line before it")
			}
			if inTable == fileHeader && top == "9" {
				if subPkg == "" {
					c.rep.addf(n, "a file table under a §9 heading that names no package (`path/`)")
				} else if !c.isDir(subPkg) {
					c.rep.addf(n, "a file table of %s: no such directory", subPkg)
				} else if fileTables[subPkg] == nil {
					fileTables[subPkg] = map[string]bool{}
				}
			}
			continue
		}
		if !tableHasHeader { // the |---| line
			tableHasHeader = true
			continue
		}
		cells := splitCells(l)
		switch inTable {
		case mapHeader:
			if packages == nil {
				continue
			}
			c.rep.rows++
			if len(cells) != 4 {
				c.rep.addf(n, "a guarantee map row with %d cells, not 4", len(cells))
				continue
			}
			home, unitPkg, e2ePkg := packages[0], packages[1], packages[2]
			before := len(c.rep.problems)
			rowHome, last := "", home
			for _, span := range codeSpans(cells[1]) {
				if m := fileRefRE.FindStringSubmatch(span); m != nil {
					dir, isFunc := c.checkFileRef(n, m, home, last)
					last = dir
					if rowHome == "" {
						if !isFunc {
							c.rep.addf(n, "the row's first reference `%s` is not a `file.go:func`: name the home function first", span)
						}
						rowHome = dir
					}
				} else if bareNameRE.MatchString(span) {
					c.checkBareName(n, span, last)
				}
			}
			if rowHome == "" {
				c.rep.addf(n, "a guarantee with no home: its \"enforced in\" cell names no `file.go:func`")
			} else {
				homes[rowHome] = true
			}
			tests := c.checkTests(n, cells[2], unitPkg, home) + c.checkTests(n, cells[3], e2ePkg, home)
			c.rep.tests += tests
			if tests == 0 {
				c.rep.addf(n, "a guarantee with no test named")
			}
			if len(c.rep.problems) == before {
				c.rep.enforced++
			}
		case fileHeader:
			if top != "9" || subPkg == "" || !c.isDir(subPkg) {
				continue
			}
			// The files it cites (its prose names are not checked: they
			// name commands, YAML paths and the shell's methods too).
			if len(cells) > 1 {
				for _, span := range codeSpans(cells[1]) {
					if m := fileRefRE.FindStringSubmatch(span); m != nil {
						c.checkFileRef(n, m, subPkg, subPkg)
					}
				}
			}
			for _, span := range codeSpans(cells[0]) {
				fileTables[subPkg][span] = true
				switch {
				case strings.HasSuffix(span, ".go"):
					if _, ok := c.pkg(subPkg).files[span]; !ok {
						c.rep.addf(n, "the file table of %s names %s: no such file", subPkg, span)
					}
				case strings.HasSuffix(span, "/"):
					if !c.isDir(filepath.Join(subPkg, span)) {
						c.rep.addf(n, "the file table of %s names %s: no such directory", subPkg, span)
					}
				}
			}
		case pathsHeader:
			for _, span := range codeSpans(cells[0]) {
				if strings.HasSuffix(span, "/") || strings.HasSuffix(span, ".go") {
					if _, err := os.Stat(filepath.Join(root, span)); err != nil {
						c.rep.addf(n, "§9 names %s: no such path", span)
					}
				}
			}
		}
	}

	// Every file of a package with a file table is in it.
	for _, pkg := range slices.Sorted(maps.Keys(fileTables)) {
		for _, f := range slices.Sorted(maps.Keys(c.pkg(pkg).files)) {
			if !strings.HasSuffix(f, "_test.go") && !fileTables[pkg][f] {
				c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: %s/%s is in no row of its file table (§9)", architectureFile, pkg, f))
			}
		}
	}

	plugins, err := pluginPackages(root)
	if err != nil {
		return c.rep, err
	}
	for _, p := range plugins {
		if !homes[p] {
			c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: plugin package %s homes no row of the guarantee map (§11)", architectureFile, p))
		}
		if fileTables[p] == nil {
			c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: plugin package %s has no file table (a §9 subsection naming `%s/`)", architectureFile, p, p))
		}
	}

	// Citations of the document's sections, in the document and everywhere else.
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && ext != ".yaml" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range citationRE.FindAllStringSubmatch(string(b), -1) {
			if !sections[m[1]] {
				rel, _ := filepath.Rel(root, path)
				c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s cites ARCHITECTURE.md §%s: no such section", filepath.ToSlash(rel), m[1]))
			}
		}
		return nil
	})
	return c.rep, err
}

func TestArchitectureDocumentIsTrue(t *testing.T) {
	doc, err := os.ReadFile(architectureFile)
	require.NoError(t, err)
	rep, err := checkArchitecture(".", string(doc))
	require.NoError(t, err)
	t.Logf("guarantee map: %d rows, %d enforced; %d test names, %d file references and %d names beside them checked",
		rep.rows, rep.enforced, rep.tests, rep.refs, rep.names)
	if len(rep.problems) > 0 {
		t.Errorf("ARCHITECTURE.md is stale: fix the reference or the code (§11 says how the map is read):\n%s",
			strings.Join(rep.problems, "\n"))
	}
	assert.Equal(t, rep.rows, rep.enforced, "every row of the guarantee map is enforced")
	assert.NotZero(t, rep.rows, "the guarantee map was found")
}

// archFixture writes a small module tree: one plugin package with a test, a
// ground package, an end-to-end package.
func archFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"input/foo/foo.go":          "package foo\n\ntype T struct{}\n\nfunc Keep() {}\n\nfunc (*T) Method() {}\n",
		"input/foo/foo_test.go":     "package foo\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) {}\n\nfunc TestKeepAlso(t *testing.T) {}\n",
		"input/foo/testdata/x.go":   "package ignored\n",
		"internal/bar/bar.go":       "package bar\n\nfunc Ground() {}\n",
		"internal/bar/bar_test.go":  "package bar_test\n\nimport \"testing\"\n\nfunc TestBar(t *testing.T) {}\n",
		"integration/e2e_test.go":   "package integration\n\nimport \"testing\"\n\nfunc TestEndToEnd(t *testing.T) {}\n",
		"integration/doc.go":        "// Package integration cites ARCHITECTURE.md §11.1.\npackage integration\n",
		"input/foo/sub/sub.go":      "package sub\n\nfunc Sub() {}\n",
		"input/foo/sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {}\n",
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	return root
}

const archFixtureDoc = "# Architecture\n\n" +
	"## 9. File map\n\n" +
	"| path | what lives there |\n|---|---|\n| `input/foo/` | the plugin |\n\n" +
	"### 9.1 Foo, `input/foo/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `foo.go` | everything |\n\n" +
	"### 9.2 Sub, `input/foo/sub/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `sub.go` | the rest |\n\n" +
	"## 11. Guarantee map\n\n" +
	"### 11.1 Foo\n\n" +
	"Packages: home `input/foo`, unit tests `input/foo`, end-to-end tests `integration`.\n\n" +
	"| guarantee | enforced in | unit test | end-to-end test |\n|---|---|---|---|\n" +
	"| it keeps | `foo.go:Keep` (`T.Method`, `a_config_field`, the prose here), `foo.go:T.Method`; `internal/bar/bar.go:Ground` | `TestKeep`, `TestKeepA*`, `[internal/bar] TestBar` | `TestEndToEnd/sub` |\n" +
	"| the sub keeps | `sub/sub.go:Sub` | `[sub] TestSub` | — |\n\n" +
	"## 12. Next\n"

// Each kind of stale reference is caught, and the fixture itself is clean.
func TestArchitectureCheckCatchesEachStaleReference(t *testing.T) {
	rep, err := checkArchitecture(archFixture(t), archFixtureDoc)
	require.NoError(t, err)
	require.Empty(t, rep.problems)
	require.Equal(t, 2, rep.rows)
	require.Equal(t, 2, rep.enforced)
	rep, err = checkArchitecture(archFixture(t), strings.Replace(archFixtureDoc, "`TestKeep`", "`TestKept`", 1))
	require.NoError(t, err)
	require.Equal(t, 1, rep.enforced, "a row with a stale reference is not enforced")

	for _, c := range []struct {
		name string
		doc  func(string) string
		tree map[string]string // files written into the fixture
		want string
	}{
		{name: "a test renamed", doc: func(d string) string { return strings.Replace(d, "`TestKeep`", "`TestKept`", 1) },
			want: "`TestKept`: no func TestKept( in the _test.go files of input/foo"},
		{name: "a test of another package", doc: func(d string) string { return strings.Replace(d, "`[internal/bar] TestBar`", "`TestBar`", 1) },
			want: "no func TestBar( in the _test.go files of input/foo"},
		{name: "an end-to-end test gone", doc: func(d string) string { return strings.Replace(d, "TestEndToEnd/sub", "TestEndToEnd2", 1) },
			want: "no func TestEndToEnd2( in the _test.go files of integration"},
		{name: "a family with no member", doc: func(d string) string { return strings.Replace(d, "`TestKeepA*`", "`TestGone*`", 1) },
			want: "no test of input/foo starts with TestGone"},
		{name: "a marker naming no package", doc: func(d string) string { return strings.Replace(d, "[internal/bar]", "[internal/baz]", 1) },
			want: "no package internal/baz"},
		{name: "an elided name", doc: func(d string) string { return strings.Replace(d, "`TestKeepA*`", "`…Also`", 1) },
			want: "an elided test name"},
		{name: "a function gone", doc: func(d string) string { return strings.Replace(d, "`foo.go:Keep`", "`foo.go:Kept`", 1) },
			want: "input/foo/foo.go declares no func or type Kept"},
		{name: "a method of another type", doc: func(d string) string { return strings.Replace(d, "`foo.go:T.Method`", "`foo.go:U.Method`", 1) },
			want: "declares no func or type U.Method"},
		{name: "a file gone", doc: func(d string) string {
			return strings.Replace(d, "internal/bar/bar.go:Ground", "internal/bar/baz.go:Ground", 1)
		},
			want: "no file internal/bar/baz.go"},
		{name: "a bare file is in the folder before it", doc: func(d string) string {
			return strings.Replace(d, "`internal/bar/bar.go:Ground`", "`internal/bar/bar.go:Ground`, `foo.go`", 1)
		}, want: "`foo.go`: no file internal/bar/foo.go"},
		{name: "a name beside a reference gone", doc: func(d string) string {
			return strings.Replace(d, "`T.Method`, `a_config_field`", "`T.Kept`, `a_config_field`", 1)
		},
			want: "`T.Kept`: Kept is no identifier of input/foo"},
		{name: "a home that is no function", doc: func(d string) string { return strings.Replace(d, "`sub/sub.go:Sub`", "`sub/sub.go`", 1) },
			want: "is not a `file.go:func`"},
		{name: "a row with no test", doc: func(d string) string { return strings.Replace(d, "`[sub] TestSub`", "—", 1) },
			want: "a guarantee with no test named"},
		{name: "a table without its packages", doc: func(d string) string { return strings.Replace(d, "Packages: home", "Packages home", 1) },
			want: "without a `Packages: home"},
		{name: "another table in the map", doc: func(d string) string {
			return strings.Replace(d, "## 12. Next", "| guarantee | where |\n|---|---|\n| x | `foo.go:Keep` |\n\n## 12. Next", 1)
		}, want: "a table row without its header"},
		{name: "a table split by a blank line", doc: func(d string) string {
			return strings.Replace(d, "| `foo.go` | everything |", "| `foo.go` | everything |\n\n| `bar.go` | more |", 1)
		}, want: "a table row without its header"},
		{name: "a plugin package homing no row", doc: func(d string) string { return strings.Replace(d, "`sub/sub.go:Sub`", "`foo.go:Keep`", 1) },
			want: "plugin package input/foo/sub homes no row"},
		{name: "a new plugin package", tree: map[string]string{"output/new/new.go": "package new\n"},
			want: "plugin package output/new homes no row"},
		{name: "a new plugin package has no file table", tree: map[string]string{"output/new/new.go": "package new\n"},
			want: "plugin package output/new has no file table"},
		{name: "a file missing from its table", tree: map[string]string{"input/foo/extra.go": "package foo\n"},
			want: "input/foo/extra.go is in no row of its file table"},
		{name: "a file table naming a file gone", doc: func(d string) string {
			return strings.Replace(d, "| `foo.go` | everything |", "| `foo.go`, `gone.go` | everything |", 1)
		},
			want: "the file table of input/foo names gone.go: no such file"},
		{name: "a file a file table cites gone", doc: func(d string) string {
			return strings.Replace(d, "| `foo.go` | everything |", "| `foo.go` | everything but `internal/bar/gone.go` |", 1)
		}, want: "no file internal/bar/gone.go"},
		{name: "a path of the file map gone", doc: func(d string) string { return strings.Replace(d, "| `input/foo/` |", "| `input/fooo/` |", 1) },
			want: "§9 names input/fooo/: no such path"},
		{name: "a citation of a section gone", tree: map[string]string{"internal/bar/cite.go": "// See ARCHITECTURE" + ".md §11.7.\npackage bar\n"},
			want: "internal/bar/cite.go cites ARCHITECTURE" + ".md §11.7: no such section"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := archFixture(t)
			for name, text := range c.tree {
				path := filepath.Join(root, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			}
			doc := archFixtureDoc
			if c.doc != nil {
				doc = c.doc(doc)
				require.NotEqual(t, archFixtureDoc, doc, "the case changes the document")
			}
			rep, err := checkArchitecture(root, doc)
			require.NoError(t, err)
			found := slices.ContainsFunc(rep.problems, func(p string) bool { return strings.Contains(p, c.want) })
			assert.True(t, found, "want a problem containing %q, got:\n%s", c.want, strings.Join(rep.problems, "\n"))
		})
	}
}
