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
// guarantee map; §9 and §16, the file tables). checkArchitecture reads the
// document and the tree under root and names every reference that went stale:
//
//   - a row of the guarantee map without its id (`**G12**` first in its
//     guarantee cell), or an id given twice;
//   - a test the guarantee map names that no `_test.go` file of its package
//     declares (a prefix with `*`: none declared);
//   - a `file.go:func` (or `file.go:Type.method`) that is not declared in that
//     file, a `file.go` that does not exist;
//   - a row without a home (a `file.go:func` first in its "enforced in"
//     cell) or without a test, an elided test name (`…Suffix`);
//   - a plugin package (a directory under input/, output/ or processor/ with a
//     non-test Go file) that is no row's home;
//   - a package of the module (a directory with a non-test Go file, but for
//     testdata, hidden folders and nested modules) without a file table in §9
//     or §16; the root package, the binary, has none: each of its non-test Go
//     files is a row of §9's first table instead;
//   - a home file (the file of a row's first reference) without the header of
//     each guarantee it is home of, right after its package clause:
//     `// Home of G12 (ARCHITECTURE.md §11.1): <one line>. Main test: TestX.`;
//     a header naming a guarantee the file is not the home of, another
//     subsection than the row's, or a main test that is not one of the row's
//     tests that exist; a header anywhere else in a file, or not of that form;
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

// The sections whose subsections hold file tables: the file map and its
// appendix (the packages that home no guarantee of their own).
var fileTableSections = []string{"9", "16"}

var (
	headingRE   = regexp.MustCompile(`^(#{2,3}) (\d+(?:\.\d+)*)\.? `)
	packagesRE  = regexp.MustCompile("^Packages: home `([^`]+)`, unit tests `([^`]+)`, end-to-end tests `([^`]+)`\\.?\\s*$")
	codeSpanRE  = regexp.MustCompile("`([^`]+)`")
	bareNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*$`)
	fileRefRE   = regexp.MustCompile(`^((?:[\w.-]+/)*)([\w-]+\.go)(?::(\w+)(?:\.(\w+))?)?$`)
	testNameRE  = regexp.MustCompile(`^(?:\[([^\]]+)\] )?((?:Test|Fuzz|Benchmark|Example)\w*)(\*)?(/\S*)?$`)
	markedRE    = regexp.MustCompile(`^\[([^\]]+)\] `)
	citationRE  = regexp.MustCompile(`ARCHITECTURE\.md §(\d+(?:\.\d+)*)`)
	rowIDRE     = regexp.MustCompile(`^\*\*G(\d+)\*\* `)
	mapHeader   = "| guarantee | enforced in | unit test | end-to-end test |"
	fileHeader  = "| file | what lives there |"
	pathsHeader = "| path | what lives there |"
)

// A home file's header, one paragraph per guarantee (in the text of its
// comment, lines joined): headerStartRE finds each, headerRE reads it.
var (
	headerStartRE = regexp.MustCompile(`Home of G\d+`)
	headerRE      = regexp.MustCompile(`(?s)^Home of G(\d+) \(ARCHITECTURE\.md\s+§(\d+(?:\.\d+)*)\):\s+\S.*?\.\s+Main\s+test:\s+((?:Test|Fuzz)\w*)\.(?:\s|$)`)
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
	headers  int // guarantee headers of home files checked
	tables   int // packages with a file table, each checked whole
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

// guaranteeRow is what the header check needs of one row of the map.
type guaranteeRow struct {
	id    string          // "G12"
	sec   string          // its subsection, "11.1"
	home  string          // its home file, from the module root
	line  int             // in the document
	tests map[string]bool // the concrete test names it gives that exist
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
// Those that exist (not families) are added to found.
func (c *archChecker) checkTests(line int, cell, defaultPkg, home string, found map[string]bool) int {
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
			continue
		}
		found[m[2]] = true
	}
	return n
}

// goPackages lists the directories of the module under root holding a
// non-test Go file ("." for root itself), skipping testdata, hidden folders
// and nested modules (a folder with a go.mod of its own, tools/dashboard).
func goPackages(root string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
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
	slices.Sort(pkgs)
	return pkgs, err
}

func isPlugin(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return slices.Contains(pluginRoots, first)
}

// guaranteeHeader is one paragraph of a home file's header.
type guaranteeHeader struct {
	id, sec, test string
}

// fileHeaders reads the guarantee headers of one Go file: the comment
// after its package clause (and imports), before its first declaration.
// A header anywhere else, or one not of the form, is a problem.
func fileHeaders(rel string, src []byte) ([]guaranteeHeader, []string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	var first ast.Decl // the first declaration that is not an import
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			continue
		}
		first = d
		break
	}
	var firstDoc *ast.CommentGroup
	switch d := first.(type) {
	case *ast.GenDecl:
		firstDoc = d.Doc
	case *ast.FuncDecl:
		firstDoc = d.Doc
	}
	var headers []guaranteeHeader
	var problems []string
	for _, cg := range f.Comments {
		text := cg.Text()
		starts := headerStartRE.FindAllStringIndex(text, -1)
		if starts == nil {
			continue
		}
		line := fset.Position(cg.Pos()).Line
		inPlace := cg.Pos() > f.Name.End() && cg != firstDoc && (first == nil || cg.End() < first.Pos())
		if !inPlace {
			problems = append(problems, fmt.Sprintf("%s:%d: a guarantee header (`Home of G…`) outside its place, a comment of its own after the package clause and before the first declaration", rel, line))
			continue
		}
		for i, st := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			m := headerRE.FindStringSubmatch(text[st[0]:end])
			if m == nil {
				problems = append(problems, fmt.Sprintf("%s:%d: a guarantee header not of the form `Home of G<n> (ARCHITECTURE.md §11.x): <one line>. Main test: TestX.`: %q", rel, line, strings.TrimSpace(text[st[0]:end])))
				continue
			}
			headers = append(headers, guaranteeHeader{id: "G" + m[1], sec: m[2], test: m[3]})
		}
	}
	return headers, problems, nil
}

// checkHeaders holds every non-test Go file of the module to the rows whose
// home it is: a header per row, and no header but those.
func (c *archChecker) checkHeaders(pkgs []string, rows []*guaranteeRow) error {
	byID := map[string]*guaranteeRow{}
	homed := map[string][]*guaranteeRow{}
	for _, r := range rows {
		byID[r.id] = r
		homed[r.home] = append(homed[r.home], r)
	}
	for _, pkg := range pkgs {
		for _, name := range slices.Sorted(maps.Keys(c.pkg(pkg).files)) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			rel := filepath.ToSlash(filepath.Join(pkg, name))
			src, err := os.ReadFile(filepath.Join(c.root, rel))
			if err != nil {
				return err
			}
			if len(homed[rel]) == 0 && !headerStartRE.Match(src) {
				continue
			}
			headers, problems, err := fileHeaders(rel, src)
			if err != nil {
				c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: does not parse, its guarantee headers unchecked: %v", rel, err))
				continue
			}
			c.rep.problems = append(c.rep.problems, problems...)
			named := map[string]bool{}
			for _, h := range headers {
				c.rep.headers++
				r := byID[h.id]
				switch {
				case named[h.id]:
					c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: the header of %s is there twice", rel, h.id))
				case r == nil:
					c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: a header names %s, which no row of the guarantee map (§11) has", rel, h.id))
				case r.home != rel:
					c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: a header names %s, whose home is %s (%s:%d): move the header there", rel, h.id, r.home, architectureFile, r.line))
				default:
					if h.sec != r.sec {
						c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: the header of %s cites §%s; its row is in §%s", rel, h.id, h.sec, r.sec))
					}
					if !r.tests[h.test] {
						c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: the header of %s names main test %s, which is not one of the tests its row (%s:%d) names that exist", rel, h.id, h.test, architectureFile, r.line))
					}
				}
				named[h.id] = true
			}
			for _, r := range homed[rel] {
				if !named[r.id] {
					c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: the home of %s (%s:%d) has no header naming it: add `// Home of %s (ARCHITECTURE.md §%s): <one line>. Main test: TestX.` after its package clause", rel, r.id, architectureFile, r.line, r.id, r.sec))
				}
			}
		}
	}
	return nil
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
	fileTables := map[string]map[string]bool{} // package → the files its §9 or §16 table lists
	pathsNamed := map[string]bool{}            // the paths §9's first table names
	var rows []*guaranteeRow
	ids := map[string]int{} // a row's id → its line

	var (
		top, sub       string // the current "## n." and "### n.m" numbers
		subPkg         string // the package of the current §9 or §16 subsection
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
			if slices.Contains(fileTableSections, top) && sub != "" {
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
			if inTable == "" && (slices.Contains(fileTableSections, top) || top == "11") {
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
			if inTable == fileHeader && slices.Contains(fileTableSections, top) {
				if subPkg == "" {
					c.rep.addf(n, "a file table under a §%s heading that names no package (`path/`)", top)
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
			row := &guaranteeRow{sec: sub, line: n, tests: map[string]bool{}}
			if m := rowIDRE.FindStringSubmatch(cells[0]); m == nil {
				c.rep.addf(n, "a guarantee without its id: start its cell with `**G<n>**`, the next number no row has had")
			} else if row.id = "G" + m[1]; ids[row.id] != 0 {
				c.rep.addf(n, "the id %s twice (line %d has it): an id is never reused", row.id, ids[row.id])
			} else {
				ids[row.id] = n
			}
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
						row.home = filepath.ToSlash(filepath.Join(dir, m[2]))
					}
				} else if bareNameRE.MatchString(span) {
					c.checkBareName(n, span, last)
				}
			}
			if rowHome == "" {
				c.rep.addf(n, "a guarantee with no home: its \"enforced in\" cell names no `file.go:func`")
			} else {
				homes[rowHome] = true
				if row.id != "" {
					rows = append(rows, row)
				}
			}
			tests := c.checkTests(n, cells[2], unitPkg, home, row.tests) + c.checkTests(n, cells[3], e2ePkg, home, row.tests)
			c.rep.tests += tests
			if tests == 0 {
				c.rep.addf(n, "a guarantee with no test named")
			}
			if len(c.rep.problems) == before {
				c.rep.enforced++
			}
		case fileHeader:
			if !slices.Contains(fileTableSections, top) || subPkg == "" || !c.isDir(subPkg) {
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
				pathsNamed[span] = true
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
		c.rep.tables++
		for _, f := range slices.Sorted(maps.Keys(c.pkg(pkg).files)) {
			if !strings.HasSuffix(f, "_test.go") && !fileTables[pkg][f] {
				c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: %s/%s is in no row of its file table (§9, §16)", architectureFile, pkg, f))
			}
		}
	}

	pkgs, err := goPackages(root)
	if err != nil {
		return c.rep, err
	}
	for _, p := range pkgs {
		if p == "." {
			// The binary: its files are rows of §9's first table.
			for _, f := range slices.Sorted(maps.Keys(c.pkg(p).files)) {
				if !strings.HasSuffix(f, "_test.go") && !pathsNamed[f] {
					c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: %s of the root package is in no row of §9's first table (`| path | what lives there |`)", architectureFile, f))
				}
			}
			continue
		}
		if isPlugin(p) && !homes[p] {
			c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: plugin package %s homes no row of the guarantee map (§11)", architectureFile, p))
		}
		if fileTables[p] == nil {
			where := "§16"
			if isPlugin(p) {
				where = "§9"
			}
			c.rep.problems = append(c.rep.problems, fmt.Sprintf("%s: package %s has no file table (a %s subsection naming `%s/`, its table naming each of its non-test Go files)", architectureFile, p, where, p))
		}
	}

	// The guarantee headers of the home files, and of no other file.
	if err := c.checkHeaders(pkgs, rows); err != nil {
		return c.rep, err
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
	t.Logf("guarantee map: %d rows, %d enforced; %d test names, %d file references and %d names beside them checked; %d guarantee headers of home files; %d packages' file tables",
		rep.rows, rep.enforced, rep.tests, rep.refs, rep.names, rep.headers, rep.tables)
	if len(rep.problems) > 0 {
		t.Errorf("ARCHITECTURE.md is stale: fix the reference or the code (§11 says how the map is read):\n%s",
			strings.Join(rep.problems, "\n"))
	}
	assert.Equal(t, rep.rows, rep.enforced, "every row of the guarantee map is enforced")
	assert.NotZero(t, rep.rows, "the guarantee map was found")
}

// archFixture writes a small module tree: a binary, one plugin package with a
// test and a subpackage, each the home of a guarantee, a ground package, an
// end-to-end package, and a module of its own inside it.
func archFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"main.go":                   "package main\n\nfunc main() {}\n",
		"input/foo/foo.go":          "// Package foo keeps.\npackage foo\n\n" + fooHeader + "\nimport \"fmt\"\n\ntype T struct{}\n\nfunc Keep() { fmt.Println() }\n\nfunc (*T) Method() {}\n",
		"input/foo/foo_test.go":     "package foo\n\nimport \"testing\"\n\nfunc TestKeep(t *testing.T) {}\n\nfunc TestKeepAlso(t *testing.T) {}\n",
		"input/foo/testdata/x.go":   "package ignored\n",
		"internal/bar/bar.go":       "package bar\n\nfunc Ground() {}\n",
		"internal/bar/bar_test.go":  "package bar_test\n\nimport \"testing\"\n\nfunc TestBar(t *testing.T) {}\n",
		"integration/e2e_test.go":   "package integration\n\nimport \"testing\"\n\nfunc TestEndToEnd(t *testing.T) {}\n",
		"integration/doc.go":        "// Package integration cites ARCHITECTURE.md §11.1.\npackage integration\n",
		"input/foo/sub/sub.go":      "package sub\n\n" + subHeader + "\nfunc Sub() {}\n",
		"input/foo/sub/sub_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {}\n",
		"tools/x/go.mod":            "module x\n",
		"tools/x/x.go":              "package main\n\n// Home of G7 (ARCHITECTURE.md §11.1): another module's. Main test: TestX.\n",
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	return root
}

// The fixture's home files' headers.
const (
	fooHeader = "// Home of G1 (ARCHITECTURE.md §11.1): it keeps. Main test:\n// TestKeep.\n"
	subHeader = "// Home of G2 (ARCHITECTURE.md §11.1): the sub keeps. Main test: TestSub.\n"
)

const archFixtureDoc = "# Architecture\n\n" +
	"## 9. File map\n\n" +
	"| path | what lives there |\n|---|---|\n| `main.go` | the binary |\n| `input/foo/` | the plugin |\n\n" +
	"### 9.1 Foo, `input/foo/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `foo.go` | everything |\n\n" +
	"### 9.2 Sub, `input/foo/sub/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `sub.go` | the rest |\n\n" +
	"## 11. Guarantee map\n\n" +
	"### 11.1 Foo\n\n" +
	"Packages: home `input/foo`, unit tests `input/foo`, end-to-end tests `integration`.\n\n" +
	"| guarantee | enforced in | unit test | end-to-end test |\n|---|---|---|---|\n" +
	"| **G1** it keeps | `foo.go:Keep` (`T.Method`, `a_config_field`, the prose here), `foo.go:T.Method`; `internal/bar/bar.go:Ground` | `TestKeep`, `TestKeepA*`, `[internal/bar] TestBar` | `TestEndToEnd/sub` |\n" +
	"| **G2** the sub keeps | `sub/sub.go:Sub` | `[sub] TestSub` | — |\n\n" +
	"## 12. Next\n\n" +
	"## 16. Appendix\n\n" +
	"### 16.1 Bar, `internal/bar/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `bar.go` | the ground |\n\n" +
	"### 16.2 `integration/`\n\n" +
	"| file | what lives there |\n|---|---|\n| `doc.go` | the documentation |\n"

// Each kind of stale reference is caught, and the fixture itself is clean.
func TestArchitectureCheckCatchesEachStaleReference(t *testing.T) {
	rep, err := checkArchitecture(archFixture(t), archFixtureDoc)
	require.NoError(t, err)
	require.Empty(t, rep.problems)
	require.Equal(t, 2, rep.rows)
	require.Equal(t, 2, rep.enforced)
	require.Equal(t, 2, rep.headers, "the nested module's file is not the module's")
	require.Equal(t, 4, rep.tables)
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
			want: "package output/new has no file table (a §9 subsection"},
		{name: "a ground package has no file table", tree: map[string]string{"internal/baz/baz.go": "package baz\n"},
			want: "package internal/baz has no file table (a §16 subsection"},
		{name: "a file missing from an appendix table", tree: map[string]string{"internal/bar/more.go": "package bar\n"},
			want: "internal/bar/more.go is in no row of its file table"},
		{name: "a file of the binary in no row of the file map", tree: map[string]string{"tools.go": "//go:build tools\n\npackage main\n"},
			want: "tools.go of the root package is in no row of §9's first table"},
		{name: "a row without its id", doc: func(d string) string { return strings.Replace(d, "| **G2** the sub", "| the sub", 1) },
			want: ":31: a guarantee without its id"},
		{name: "an id given twice", doc: func(d string) string { return strings.Replace(d, "| **G2** the sub", "| **G1** the sub", 1) },
			want: ":31: the id G1 twice (line 30 has it)"},
		{name: "a home file without its header", tree: map[string]string{"input/foo/sub/sub.go": "package sub\n\nfunc Sub() {}\n"},
			want: "input/foo/sub/sub.go: the home of G2 (ARCHITECTURE.md:31) has no header naming it"},
		{name: "a header left behind when the home moved", doc: func(d string) string {
			return strings.Replace(d, "`sub/sub.go:Sub` |", "`foo.go:T.Method`, `sub/sub.go:Sub` |", 1)
		}, want: "input/foo/sub/sub.go: a header names G2, whose home is input/foo/foo.go (ARCHITECTURE.md:31)"},
		{name: "a moved home has no header yet", doc: func(d string) string {
			return strings.Replace(d, "`sub/sub.go:Sub` |", "`foo.go:T.Method`, `sub/sub.go:Sub` |", 1)
		}, want: "input/foo/foo.go: the home of G2 (ARCHITECTURE.md:31) has no header naming it"},
		{name: "a header's main test no longer its row's", doc: func(d string) string {
			return strings.Replace(d, "`TestKeep`, `TestKeepA*`", "`TestKeepAlso`, `TestKeepA*`", 1)
		}, want: "input/foo/foo.go: the header of G1 names main test TestKeep, which is not one of the tests its row (ARCHITECTURE.md:30) names that exist"},
		{name: "a header's main test renamed", tree: map[string]string{"input/foo/foo_test.go": "package foo\n\nimport \"testing\"\n\nfunc TestKept(t *testing.T) {}\n\nfunc TestKeepAlso(t *testing.T) {}\n"},
			want: "the header of G1 names main test TestKeep, which is not one of the tests"},
		{name: "a header in another subsection than its row", doc: func(d string) string { return strings.Replace(d, "### 11.1 Foo", "### 11.2 Foo", 1) },
			want: "input/foo/sub/sub.go: the header of G2 cites §11.1; its row is in §11.2"},
		{name: "a header of a guarantee no row has", tree: map[string]string{"internal/bar/bar.go": "package bar\n\n// Home of G9 (ARCHITECTURE.md §11.1): gone. Main test: TestBar.\n\nfunc Ground() {}\n"},
			want: "internal/bar/bar.go: a header names G9, which no row of the guarantee map (§11) has"},
		{name: "a header as the package's doc", tree: map[string]string{"input/foo/sub/sub.go": subHeader + "package sub\n\nfunc Sub() {}\n"},
			want: "input/foo/sub/sub.go:1: a guarantee header (`Home of G…`) outside its place"},
		{name: "a header as a function's doc", tree: map[string]string{"input/foo/sub/sub.go": "package sub\n\n" + subHeader + "func Sub() {}\n"},
			want: "input/foo/sub/sub.go:3: a guarantee header (`Home of G…`) outside its place"},
		{name: "a header not of the form", tree: map[string]string{"input/foo/sub/sub.go": "package sub\n\n// Home of G2: the sub keeps (TestSub).\n\nfunc Sub() {}\n"},
			want: "input/foo/sub/sub.go:3: a guarantee header not of the form"},
		{name: "a header twice", tree: map[string]string{"input/foo/sub/sub.go": "package sub\n\n" + subHeader + "//\n" + subHeader + "\nfunc Sub() {}\n"},
			want: "input/foo/sub/sub.go: the header of G2 is there twice"},
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
