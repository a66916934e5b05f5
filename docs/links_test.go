package docs

import (
	"bufio"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's top, seen from this package's directory (where go test runs).
const repoRoot = ".."

// readmeMaxLines bounds the README: it is the newcomer's page, and the reference lives under docs/.
const readmeMaxLines = 300

// markdownFiles are the hand-written Markdown files whose links TestRelativeLinksResolve checks: those at
// the top, every one under docs/ and deploy/, and the receiver's README. The sources' documentation.md
// files are mdatagen's output, not ours to fix.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "*.md"))
	require.NoError(t, err)
	for _, dir := range []string{"docs", "deploy"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		require.NoError(t, err)
	}
	return append(files, filepath.Join(repoRoot, "receiver", "diskhealthreceiver", "README.md"))
}

// link is one relative link of a Markdown file: its target as written and the line it is on.
type link struct {
	target string
	line   int
}

// page is what the link check needs of a Markdown file: the anchors of its headings and its links.
type page struct {
	anchors map[string]bool
	links   []link
}

var (
	heading    = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	// Code spans are dropped before links are looked for: `[a](b)` in backticks is text, not a link.
	codeSpan = regexp.MustCompile("``[^`]*``|`[^`]*`")
	// A link or image inside a heading contributes its text to the anchor.
	headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	scheme      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// parsePage reads a Markdown file's headings and links, skipping fenced code blocks, where neither is one.
func parsePage(t *testing.T, path string) page {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	var fence string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			a := slug(m[1])
			// GitHub numbers repeated headings: the second "x" is "x-1", the third "x-2".
			if k := seen[a]; k > 0 {
				seen[a]++
				a += "-" + strconv.Itoa(k)
			} else {
				seen[a] = 1
			}
			p.anchors[a] = true
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			p.links = append(p.links, link{m[1], n})
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			p.links = append(p.links, link{m[1], n})
		}
	}
	require.NoError(t, sc.Err())
	return p
}

// slug is GitHub's anchor for a heading's text: links reduced to their text, lower case, every character
// but letters, digits, '-', '_' and spaces dropped, each space a '-'.
func slug(text string) string {
	text = headingLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestRelativeLinksResolve: every relative link in the project's Markdown names a file or directory that
// exists, and a #anchor into a Markdown file (or into the same file) names one of its headings, so moving
// a section or renaming a heading cannot leave a reader at a dead link.
func TestRelativeLinksResolve(t *testing.T) {
	pages := map[string]page{}
	load := func(path string) page {
		p, ok := pages[path]
		if !ok {
			p = parsePage(t, path)
			pages[path] = p
		}
		return p
	}
	for _, file := range markdownFiles(t) {
		rel, err := filepath.Rel(repoRoot, file)
		require.NoError(t, err)
		for _, l := range load(file).links {
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue
			}
			where := rel + ":" + strconv.Itoa(l.line) + ": " + l.target
			target, anchor, _ := strings.Cut(l.target, "#")
			path, err := url.PathUnescape(target)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: no such file or directory", where)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			assert.True(t, load(dest).anchors[strings.ToLower(anchor)], "%s: no heading with that anchor", where)
		}
	}
}

// TestReadmeFitsOnePage: README.md is at most readmeMaxLines lines; what does not fit goes under docs/.
func TestReadmeFitsOnePage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(data), "\n")
	assert.LessOrEqual(t, lines, readmeMaxLines, "README.md has %d lines; move reference text under docs/", lines)
}

// TestSlug holds slug to GitHub's anchors for the kinds of heading these pages have.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"SMART / NVMe health":                                  "smart--nvme-health",
		"How it is tested (`make test`)":                       "how-it-is-tested-make-test",
		"/dev/shm headroom per pod":                            "devshm-headroom-per-pod",
		"Remote write: Mimir, Thanos, Cortex, VictoriaMetrics": "remote-write-mimir-thanos-cortex-victoriametrics",
		"See [the docs](docs/x.md) and snake_case":             "see-the-docs-and-snake_case",
		"File latency (eBPF, opt-in)":                          "file-latency-ebpf-opt-in",
	} {
		assert.Equal(t, want, slug(heading), heading)
	}
}
