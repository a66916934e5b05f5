package semconvcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// putMethods are pcommon.Map's setters and the type each gives the value, in mdatagen's words.
var putMethods = map[string]string{
	"PutStr": "string", "PutInt": "int", "PutDouble": "double", "PutBool": "bool",
	"PutEmptySlice": "slice", "PutEmptyMap": "map", "PutEmptyBytes": "bytes", "PutEmpty": "",
}

// ScanCode returns every attribute key the Go code under dir puts by hand (a call of a pcommon.Map
// setter: PutStr, PutInt …), with the type the setter gives it and where. Tests and generated files
// (generated_*.go, from metadata.yaml) are skipped. The key must be a string constant, a literal or a
// const of the tree, so that no key can escape the check: any other key expression is an error naming
// its place. Reading the code, not running it, is what makes this complete: a log record that only a
// rare condition builds (an NVMe error entry, a checkpoint that will not fit) is seen like any other.
func ScanCode(dir string) ([]Attribute, error) {
	fset := token.NewFileSet()
	type file struct {
		dir string
		f   *ast.File
	}
	var files []file
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "generated_") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, file{filepath.Dir(path), f})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// String constants by package directory (for a bare name) and by package name (for pkg.Name).
	byDir, byPkg := map[string]map[string]string{}, map[string]map[string]string{}
	for _, fl := range files {
		for name, v := range stringConsts(fl.f) {
			put(byDir, fl.dir, name, v)
			put(byPkg, fl.f.Name.Name, name, v)
		}
	}
	var out []Attribute
	var errs []string
	for _, fl := range files {
		ast.Inspect(fl.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			typ, ok := putMethods[sel.Sel.Name]
			if !ok {
				return true
			}
			pos := fset.Position(call.Pos())
			where := fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
			key, ok := constString(call.Args[0], byDir[fl.dir], byPkg)
			if !ok {
				errs = append(errs, where+": the attribute key is not a string constant, so the semantic-conventions check cannot see it")
				return true
			}
			out = append(out, Attribute{Key: key, Type: typ, Source: where})
			return true
		})
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

func put(m map[string]map[string]string, k, name, v string) {
	if m[k] == nil {
		m[k] = map[string]string{}
	}
	m[k][name] = v
}

// stringConsts are the file's constants whose value is a string literal.
func stringConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					break
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// constString is e's value when e is a string literal, a constant of its package or pkg.Constant.
func constString(e ast.Expr, local map[string]string, byPkg map[string]map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, err := strconv.Unquote(x.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := local[x.Name]
		return v, ok
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok {
			v, ok := byPkg[pkg.Name][x.Sel.Name]
			return v, ok
		}
	}
	return "", false
}
