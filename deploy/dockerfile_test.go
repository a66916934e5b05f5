package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// No Docker engine runs here, so the image cannot be built in a test. These tests check what the
// build depends on (the stages, the paths it copies from `make build`, the user), and
// TestImageLayoutRuns runs the binary in a root laid out as the image is.

// instruction is one Dockerfile instruction: its upper-case keyword and its arguments.
type instruction struct {
	cmd  string
	args string
	line int
}

// stage is one FROM ... [AS name] section.
type stage struct {
	name, base string
	body       []instruction
}

// parseDockerfile splits a Dockerfile into stages, joining continuation lines and dropping comments.
func parseDockerfile(data string) ([]stage, error) {
	var stages []stage
	var pending strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if pending.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if pending.Len() > 0 && strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if pending.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			pending.WriteString(strings.TrimSpace(cont) + " ")
			continue
		}
		pending.WriteString(line)
		text := pending.String()
		pending.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s", start, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("line %d: %s before the first FROM", start, in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if pending.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	return stages, sc.Err()
}

// resolved is what a target stage ends up with after its FROM chain: the files it copies from the
// build context (destination -> source), its user, environment, entrypoint and command.
type resolved struct {
	base       string
	copies     map[string]string
	fromStages map[string]string // destination -> "stage:source" for COPY --from
	user       string
	env        map[string]string
	entrypoint []string
	cmd        []string
	expose     []string
}

func resolveStage(stages []stage, target string) (resolved, error) {
	byName := map[string]int{}
	for i, s := range stages {
		if s.name != "" {
			byName[s.name] = i
		}
	}
	idx := len(stages) - 1
	if target != "" {
		i, ok := byName[target]
		if !ok {
			return resolved{}, fmt.Errorf("no stage %q", target)
		}
		idx = i
	}
	var chain []stage
	for seen := 0; ; seen++ {
		if seen > len(stages) {
			return resolved{}, fmt.Errorf("FROM cycle at %q", stages[idx].name)
		}
		chain = append([]stage{stages[idx]}, chain...)
		i, ok := byName[stages[idx].base]
		if !ok {
			break
		}
		idx = i
	}
	r := resolved{base: chain[0].base, copies: map[string]string{}, fromStages: map[string]string{}, env: map[string]string{}}
	for _, s := range chain {
		for _, in := range s.body {
			switch in.cmd {
			case "COPY":
				f := strings.Fields(in.args)
				from := ""
				if strings.HasPrefix(f[0], "--from=") {
					from, f = strings.TrimPrefix(f[0], "--from="), f[1:]
				}
				if len(f) != 2 {
					return resolved{}, fmt.Errorf("line %d: COPY wants one source and one destination", in.line)
				}
				if from != "" {
					r.fromStages[f[1]] = from + ":" + f[0]
				} else {
					r.copies[f[1]] = f[0]
				}
			case "USER":
				r.user = in.args
			case "ENV":
				for _, kv := range strings.Fields(in.args) {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return resolved{}, fmt.Errorf("line %d: ENV %q is not KEY=value", in.line, kv)
					}
					r.env[k] = v
				}
			case "ENTRYPOINT", "CMD":
				var argv []string
				if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
					return resolved{}, fmt.Errorf("line %d: %s must use the exec (JSON) form: %w", in.line, in.cmd, err)
				}
				if in.cmd == "ENTRYPOINT" {
					r.entrypoint = argv
				} else {
					r.cmd = argv
				}
			case "EXPOSE":
				r.expose = append(r.expose, strings.Fields(in.args)...)
			}
		}
	}
	return r, nil
}

func TestParseDockerfile(t *testing.T) {
	stages, err := parseDockerfile("# c\nFROM a AS one\nRUN x \\\n  # inner\n  y\nFROM one AS two\nUSER 5\nFROM two\n")
	require.NoError(t, err)
	require.Len(t, stages, 3)
	assert.Equal(t, stage{name: "one", base: "a", body: []instruction{{cmd: "RUN", args: "x y", line: 3}}}, stages[0])
	r, err := resolveStage(stages, "")
	require.NoError(t, err)
	assert.Equal(t, "a", r.base)
	assert.Equal(t, "5", r.user)

	for _, bad := range []string{"RUN x\n", "FROM a b\n", "FROM a\nRUN x \\\n"} {
		_, err := parseDockerfile(bad)
		require.Error(t, err, bad)
	}
	stages, err = parseDockerfile("FROM a AS a\n")
	require.NoError(t, err)
	_, err = resolveStage(stages, "")
	assert.ErrorContains(t, err, "cycle")
}

// buildOutput is where `make build` puts the collector: builder-config.yaml's output_path and name.
func buildOutput(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../builder-config.yaml")
	require.NoError(t, err)
	var manifest struct {
		Dist struct {
			Name       string `json:"name"`
			OutputPath string `json:"output_path"`
		} `json:"dist"`
	}
	require.NoError(t, yaml.Unmarshal(data, &manifest))
	require.NotEmpty(t, manifest.Dist.Name)
	out := filepath.ToSlash(filepath.Join(manifest.Dist.OutputPath, manifest.Dist.Name))

	// The Makefile's DIST (what `make test` hands the end-to-end tests) is the same file.
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^DIST\s*:=\s*\$\(CURDIR\)/(\S+)$`).FindSubmatch(mk)
	require.NotNil(t, m, "Makefile has no DIST := $(CURDIR)/...")
	require.Equal(t, out, string(m[1]))
	return out
}

func loadImage(t *testing.T, target string) resolved {
	t.Helper()
	data, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	stages, err := parseDockerfile(string(data))
	require.NoError(t, err)
	r, err := resolveStage(stages, target)
	require.NoError(t, err)
	return r
}

// uidOf parses USER uid[:gid]; names would need an /etc/passwd the scratch image does not have.
func uidOf(t *testing.T, user string) (uid, gid int) {
	t.Helper()
	u, g, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	require.NoError(t, err, "USER %q must be numeric", user)
	gid = uid
	if g != "" {
		gid, err = strconv.Atoi(g)
		require.NoError(t, err, "USER %q must be numeric", user)
	}
	return uid, gid
}

func TestDockerfile(t *testing.T) {
	out := buildOutput(t)
	img := loadImage(t, "")

	// Static binary on an empty base.
	assert.Equal(t, "scratch", img.base)
	require.NotEmpty(t, img.entrypoint)
	bin := img.entrypoint[0]
	assert.Equal(t, out, img.copies[bin], "the image must copy the binary `make build` writes")

	// Every other file it copies from the build context exists in the repository.
	for dst, src := range img.copies {
		if dst == bin {
			continue
		}
		_, err := os.Stat(filepath.Join("..", src))
		require.NoError(t, err, "COPY %s %s", src, dst)
	}
	assert.Contains(t, img.fromStages, "/etc/ssl/certs/ca-certificates.crt", "TLS to backends needs CA certificates")
	// The SMART source's last drive database (smartscraper's imageDriveDB) before none.
	assert.Equal(t, "certs:/usr/share/smartmontools/drivedb.h", img.fromStages["/usr/share/smartmontools/drivedb.h"],
		"ATA attribute names need a drivedb.h when the host has none")

	// Non-root by default.
	require.NotEmpty(t, img.user, "the default image must set USER")
	uid, gid := uidOf(t, img.user)
	assert.NotZero(t, uid, "default USER must not be root")
	assert.NotZero(t, gid)

	// The command runs a config the image carries, and every ${env:X} without a default is set.
	require.Len(t, img.cmd, 1)
	cfgPath, ok := strings.CutPrefix(img.cmd[0], "--config=")
	require.True(t, ok, "CMD %v", img.cmd)
	src, ok := img.copies[cfgPath]
	require.True(t, ok, "CMD names %s, which the image does not copy", cfgPath)
	cfg, err := os.ReadFile(filepath.Join("..", src))
	require.NoError(t, err)
	for _, name := range requiredEnv(t, string(cfg)) {
		assert.Contains(t, img.env, name)
	}
	// The config reads the host under root_path, which the image points at /hostfs.
	assert.Contains(t, string(cfg), "root_path: ${env:DISKHEALTH_ROOT_PATH")
	assert.Equal(t, "/hostfs", img.env["DISKHEALTH_ROOT_PATH"])
	// Ports it listens on are exposed.
	for _, k := range []string{"DISKHEALTH_PROMETHEUS_ENDPOINT", "DISKHEALTH_HEALTH_ENDPOINT"} {
		_, port, _ := strings.Cut(img.env[k], ":")
		assert.Contains(t, img.expose, port, k)
	}

	// The SMART variant: the same image as uid 0, so that capabilities given with --cap-add apply.
	smart := loadImage(t, "smart")
	assert.Equal(t, img.copies, smart.copies)
	assert.Equal(t, img.entrypoint, smart.entrypoint)
	suid, _ := uidOf(t, smart.user)
	assert.Zero(t, suid)
}
