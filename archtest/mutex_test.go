package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every mutex in product code is a lockrank mutex, so that it can carry a
// rank (docs/LOCKING.md): a sync.Mutex or sync.RWMutex outside lockrank
// fails here. Test files, the integration suite and the benchmark harness
// are not product code.
func TestProductMutexesAreRanked(t *testing.T) {
	root := ".."
	skip := map[string]bool{"lockrank": true, "integration": true, "bench": true, "archtest": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if top, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); skip[top] || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		syncName := ""
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" {
				syncName = "sync"
				if imp.Name != nil {
					syncName = imp.Name.Name
				}
			}
		}
		if syncName == "" {
			return nil
		}
		ast.Inspect(af, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == syncName && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex") {
				t.Errorf("%s: sync.%s: use lockrank.%s and rank it (docs/LOCKING.md)", fset.Position(sel.Pos()), sel.Sel.Name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
