package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/eviction"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// kubeletConfigCap bounds the kubelet configuration file read (a real one is a few KiB).
const kubeletConfigCap = 1 << 20

// kubelet knows the kubelet's eviction thresholds and where its filesystems are.
type kubelet struct {
	logger                       *zap.Logger
	root                         string // root_path
	configFile, rootDir, imageFS string // host paths

	reader  eviction.Reader // remembers each signal's last good threshold
	th      eviction.Thresholds
	mtime   time.Time
	loaded  bool
	lastErr string
}

func newKubelet(logger *zap.Logger, cfg *Config) *kubelet {
	return &kubelet{logger: logger, root: cfg.RootPath, configFile: cfg.KubeletConfigFile, rootDir: cfg.KubeletRootDir,
		imageFS: cfg.ImageFSDir, th: eviction.Defaults()}
}

// under is host path p as seen below root_path.
func (k *kubelet) under(p string) string { return filepath.Join(k.root, p) }

// refresh reports whether this host is a Kubernetes node (its kubelet root directory exists) and
// re-reads the configuration file when it changed. A file that cannot be read or parsed keeps the
// thresholds last read (at first the defaults); a threshold refused keeps its signal's last good one
// (else the kubelet's default); either is logged once per distinct problem.
func (k *kubelet) refresh() bool {
	if k.rootDir == "" {
		return false
	}
	if _, err := os.Stat(k.under(k.rootDir)); err != nil {
		return false
	}
	if k.configFile == "" {
		return true
	}
	path := k.under(k.configFile)
	st, err := os.Stat(path)
	if err == nil && k.loaded && st.ModTime().Equal(k.mtime) {
		return true
	}
	var data []byte
	if err == nil {
		data, err = bounded.ReadFile(path, kubeletConfigCap, nil)
	}
	if err == nil {
		var th eviction.Thresholds
		th, err = k.reader.Parse(data)
		if th.Hard != nil {
			k.th = th
		}
		k.mtime, k.loaded = st.ModTime(), true
	}
	k.report(err)
	return true
}

func (k *kubelet) report(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == k.lastErr {
		return
	}
	k.lastErr = msg
	if err != nil {
		k.logger.Warn("kubelet configuration: eviction thresholds read with problems (for each one refused, the last good one, or the kubelet's default, stays in use)",
			zap.String("file", k.configFile), zap.Error(err))
		return
	}
	k.logger.Info("kubelet configuration read", zap.String("file", k.configFile))
}

// domains returns the domains holding the kubelet's root directory (nodefs) and its image
// filesystem, found among the results by the longest mount point containing each path; the imagefs
// only when it is another filesystem (the kubelet then has no dedicated imagefs).
func (k *kubelet) domains(results []fsusage.Result) (nodefs, imagefs *fsusage.Domain) {
	nodefs = containing(results, k.rootDir)
	imagefs = containing(results, k.imageFS)
	if imagefs != nil && nodefs != nil && *imagefs == *nodefs {
		imagefs = nil
	}
	return nodefs, imagefs
}

// containing is the domain of the mount whose mount point is the longest prefix of path.
func containing(results []fsusage.Result, path string) *fsusage.Domain {
	if path == "" {
		return nil
	}
	var best *fsusage.Result
	for i := range results {
		mp := results[i].Mount.MountPoint
		if path != mp && mp != "/" && !strings.HasPrefix(path, mp+"/") {
			continue
		}
		if best == nil || len(mp) > len(best.Mount.MountPoint) {
			best = &results[i]
		}
	}
	if best == nil {
		return nil
	}
	return &best.Domain
}

// limit is one limit on a domain and what can still be written before it bites.
type limit struct {
	name     metadata.AttributeDiskHealthFilesystemLimitName
	headroom int64
}

// signals are the eviction signals a domain may carry, by role.
var signals = [...]struct {
	signal     string
	imagefs    bool
	hard, soft metadata.AttributeDiskHealthFilesystemLimitName
}{
	{eviction.NodeFSAvailable, false, metadata.AttributeDiskHealthFilesystemLimitNameNodefsEvictionHard, metadata.AttributeDiskHealthFilesystemLimitNameNodefsEvictionSoft},
	{eviction.ImageFSAvailable, true, metadata.AttributeDiskHealthFilesystemLimitNameImagefsEvictionHard, metadata.AttributeDiskHealthFilesystemLimitNameImagefsEvictionSoft},
}

// limits returns the byte limits on a domain of usage u, free_blocks first, and the inode ones;
// nodefs and imagefs say which role the domain has (both false off a node).
func limits(u *fsusage.Usage, th *eviction.Thresholds, nodefs, imagefs bool, bytes []limit, inodes []limit) ([]limit, []limit) {
	bytes = append(bytes[:0], limit{metadata.AttributeDiskHealthFilesystemLimitNameFreeBlocks, clampInt(u.Free)})
	inodes = inodes[:0]
	for _, sig := range signals {
		if sig.imagefs && !imagefs || !sig.imagefs && !nodefs {
			continue
		}
		for _, set := range []struct {
			th   map[string]eviction.Threshold
			name metadata.AttributeDiskHealthFilesystemLimitName
		}{{th.Hard, sig.hard}, {th.Soft, sig.soft}} {
			if t, ok := set.th[sig.signal]; ok {
				bytes = append(bytes, limit{set.name, clampInt(u.Free) - clampInt(t.Of(u.Limit))})
			}
			if t, ok := set.th[eviction.NodeFSInodesFree]; ok && !sig.imagefs && u.Inodes > 0 {
				inodes = append(inodes, limit{set.name, clampInt(u.InodesFree) - clampInt(t.Of(u.Inodes))})
			}
		}
	}
	return bytes, inodes
}

// binding is the limit with the least headroom (the first of equals).
func binding(ls []limit) limit {
	b := ls[0]
	for _, l := range ls[1:] {
		if l.headroom < b.headroom {
			b = l
		}
	}
	return b
}

func clampInt(v uint64) int64 { return int64(min(v, 1<<62)) }
