package qemu

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The QEMU harness of the SMART end-to-end test: a Debian kernel (downloaded, never installed), a
// busybox initramfs with smartctl and nvme-cli, and a throw-away VM with emulated NVMe, IDE, AHCI,
// virtio-scsi and scsi_debug disks. Everything it downloads or builds is cached under _build/vmtest.
// Acceleration is TCG: KVM is used only where the CPU offers vmx/svm and /dev/kvm is writable.

// vmPackages are the Debian packages the harness needs on the host, by a command each provides.
var vmPackages = map[string]string{
	"qemu-system-x86_64": "qemu-system-x86",
	"busybox":            "busybox-static",
	"smartctl":           "smartmontools",
	"nvme":               "nvme-cli",
	"cpio":               "cpio",
	"modprobe":           "kmod",
	"depmod":             "kmod",
	"xz":                 "xz-utils",
	"dmsetup":            "dmsetup",
	"mdadm":              "mdadm",
	"mkfs.xfs":           "xfsprogs",
	"mke2fs":             "e2fsprogs",
	"tc":                 "iproute2",
	// The NFS user space (vmNFSPackages) is unpacked, never installed: installing it would start an
	// NFS server on the host. These are the libraries its programs link and libtirpc's netconfig.
	"/etc/netconfig":                            "libtirpc-common",
	"/lib/x86_64-linux-gnu/libtirpc.so.3":       "libtirpc3",
	"/lib/x86_64-linux-gnu/libwrap.so.0":        "libwrap0",
	"/lib/x86_64-linux-gnu/libnsl.so.2":         "libnsl2",
	"/lib/x86_64-linux-gnu/libgssapi_krb5.so.2": "libgssapi-krb5-2",
	"/lib/x86_64-linux-gnu/libmount.so.1":       "libmount1",
	"/lib/x86_64-linux-gnu/libblkid.so.1":       "libblkid1",
	"/lib/x86_64-linux-gnu/libsystemd.so.0":     "libsystemd0",
}

// vmNFSPackages are the Debian packages whose NFS server and client programs the guest gets
// (vmNFSPrograms): downloaded and unpacked into the kernel's cache directory, not installed.
var vmNFSPackages = []string{"nfs-kernel-server", "nfs-common", "rpcbind"}

// vmNFSPrograms are the programs taken from vmNFSPackages, by their path in the packages.
var vmNFSPrograms = []string{"usr/sbin/rpc.nfsd", "usr/sbin/rpc.mountd", "usr/sbin/exportfs", "sbin/rpcbind", "sbin/mount.nfs"}

// vmNFSModules are packed into /lib/modules/nfs (nfs.list: with their dependencies, in modprobe's
// order) for the NFS guest to load: the server, the client with NFSv3 and NFSv4.x, and netem, with
// which tc (busybox's has no netem) delays the server's loopback traffic.
var vmNFSModules = []string{"nfsd", "nfsv3", "nfsv4", "sch_netem"}

// vmModules are the kernel modules the guest loads (with their dependencies, in modprobe's order).
var vmModules = []string{"nvme", "sd_mod", "ahci", "ata_piix", "virtio_pci", "virtio_scsi", "scsi_debug"}

// vmExtraModules are packed into the initramfs (with the dependencies vmModules do not bring) but not
// loaded at boot: a guest program loads them from /lib/modules/extra, in extra.list's order, with the
// parameters it needs (null_blk's completion time, device-mapper for dmsetup; XFS and ext4 with the quota
// format module, whose project quotas the CI host's kernel is built without; the NVMe target nvmet and the
// host over TCP, for native NVMe multipath on 127.0.0.1: Debian's 6.1 kernel has no nvme-loop).
var vmExtraModules = []string{"null_blk", "dm_mod", "raid1", "dm_thin_pool", "dm_multipath", "dm_round_robin",
	"loop", "xfs", "ext4", "quota_v2", "nvmet_tcp", "nvme_tcp"}

// baseKey names the base initramfs after what goes into it, so that a cache built by an older
// harness (other modules, other tools) is rebuilt instead of used.
func baseKey() string {
	h := sha256.Sum256([]byte(buildBaseScript + strings.Join(vmModules, " ") + "|" + strings.Join(vmExtraModules, " ") +
		"|" + strings.Join(vmNFSModules, " ") + "|" + strings.Join(vmNFSPackages, " ") + "|" + strings.Join(vmNFSPrograms, " ")))
	return hex.EncodeToString(h[:6])
}

// vmKit is a prepared kernel and base initramfs.
type vmKit struct {
	kver   string
	kernel string // vmlinux (PVH boot, no decompression under TCG) or vmlinuz
	base   string // base initramfs: busybox, modules, smartctl, nvme-cli
	qemu   string // qemu-system-x86_64
}

// shell runs a bash script with a timeout and returns its combined output. The script finds the
// tools testkit.Debian.Tools found (exec keeps the last of duplicate variables).
func shell(t *testing.T, timeout time.Duration, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(append(os.Environ(), testkit.ToolPath()), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "script failed:\n%s\noutput:\n%s", script, out)
	return string(out)
}

// prepareVM returns the kernel and base initramfs, building them on first use.
func prepareVM(t *testing.T) *vmKit {
	t.Helper()
	testkit.RequireRoot(t, "the QEMU SMART test (it installs qemu-system-x86, smartmontools and nvme-cli and downloads a Debian kernel)")
	tools := testkit.Debian.Tools(t, vmPackages)
	cache, err := filepath.Abs(filepath.Join("..", "..", "_build", "vmtest"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(cache, 0o755))

	// linux-image-amd64 is the metapackage; its dependency names the current kernel package. The
	// package lists are refreshed only when the local ones name none.
	resolve := `apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'`
	pkg := strings.TrimSpace(shell(t, time.Minute, resolve))
	if pkg == "" {
		if err := testkit.Debian.Update(); err != nil {
			testkit.Unavailable(t, "no Debian kernel package to boot: %v", err)
		}
		pkg = strings.TrimSpace(shell(t, time.Minute, resolve))
	}
	require.NotEmpty(t, pkg, "apt-cache names no kernel package behind linux-image-amd64")
	k := &vmKit{kver: strings.TrimPrefix(pkg, "linux-image-"), qemu: tools["qemu-system-x86_64"]}
	kd := filepath.Join(cache, pkg)
	k.base = filepath.Join(kd, "base-"+baseKey()+".cpio.gz")
	k.kernel = filepath.Join(kd, "vmlinux")

	if _, err := os.Stat(k.base); err != nil {
		t.Logf("downloading and unpacking %s (cached in %s)", pkg, kd)
		buildBase(t, k, kd, pkg)
	}
	if fi, err := os.Stat(k.kernel); err != nil || fi.Size() == 0 {
		k.kernel = filepath.Join(kd, "boot", "vmlinuz-"+k.kver)
	}
	return k
}

// buildBase downloads the kernel package into kd and builds the base initramfs from it, under a lock:
// test binaries of one checkout share the cache.
func buildBase(t *testing.T, k *vmKit, kd, pkg string) {
	t.Helper()
	lock, err := os.OpenFile(kd+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lock.Close() // releases the lock
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX))
	if _, err := os.Stat(k.base); err == nil {
		return // built by another test binary while this one waited
	}
	require.NoError(t, os.RemoveAll(kd))
	require.NoError(t, os.MkdirAll(kd, 0o755))
	deb, err := testkit.Debian.Download(pkg, kd)
	if err != nil {
		testkit.Unavailable(t, "cannot download the Debian kernel %s: %v", pkg, err)
	}
	// Each package is downloaded into a directory of its own (Download wants the one .deb there).
	nfsDebs := make([]string, 0, len(vmNFSPackages))
	for _, p := range vmNFSPackages {
		dir := filepath.Join(kd, "debs", p)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		d, err := testkit.Debian.Download(p, dir)
		if err != nil {
			testkit.Unavailable(t, "cannot download %s for the NFS guest: %v", p, err)
		}
		nfsDebs = append(nfsDebs, d)
	}
	shell(t, 20*time.Minute, buildBaseScript, "KD="+kd, "DEB="+deb, "KVER="+k.kver, "MODULES="+strings.Join(vmModules, " "),
		"EXTRA="+strings.Join(vmExtraModules, " "), "NFSMOD="+strings.Join(vmNFSModules, " "),
		"NFSDEBS="+strings.Join(nfsDebs, " "), "NFSPROGS="+strings.Join(vmNFSPrograms, " "), "BASE="+filepath.Base(k.base))
}

// buildBaseScript unpacks the downloaded kernel package (nothing is installed: the host's /boot is
// untouched), keeps the kernel and the storage modules, and packs the base initramfs.
const buildBaseScript = `
cd "$KD"
timeout 300 dpkg-deb --fsys-tarfile "$DEB" | tar -x --wildcards './boot/vmlinuz-*' './lib/modules/*/modules.*' \
  './lib/modules/*/kernel/drivers/nvme/*' './lib/modules/*/kernel/drivers/ata/*' './lib/modules/*/kernel/drivers/scsi/*' \
  './lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/lib/*' './lib/modules/*/kernel/crypto/*' \
  './lib/modules/*/kernel/arch/x86/crypto/*' './lib/modules/*/kernel/block/*' \
  './lib/modules/*/kernel/drivers/block/*' './lib/modules/*/kernel/drivers/md/*' './lib/modules/*/kernel/fs/configfs/*' \
  './lib/modules/*/kernel/fs/xfs/*' './lib/modules/*/kernel/fs/ext4/*' './lib/modules/*/kernel/fs/jbd2/*' \
  './lib/modules/*/kernel/fs/mbcache.ko*' './lib/modules/*/kernel/fs/quota/*' \
  './lib/modules/*/kernel/fs/nfs/*' './lib/modules/*/kernel/fs/nfsd/*' './lib/modules/*/kernel/fs/nfs_common/*' \
  './lib/modules/*/kernel/fs/lockd/*' './lib/modules/*/kernel/fs/netfs/*' './lib/modules/*/kernel/fs/fscache/*' \
  './lib/modules/*/kernel/net/sunrpc/*' './lib/modules/*/kernel/net/dns_resolver/*' './lib/modules/*/kernel/net/sched/*' 2>/dev/null || true
rm -f "$DEB"
depmod -b "$KD" "$KVER"
# The uncompressed kernel boots through PVH without the xz decompressor, seconds faster under TCG.
off=$(LC_ALL=C grep -abo $'\xfd7zXZ' "boot/vmlinuz-$KVER" | head -1 | cut -d: -f1 || true)
if [ -n "$off" ]; then (set +o pipefail; tail -c +$((off + 1)) "boot/vmlinuz-$KVER" | xz -dc --single-stream >vmlinux) 2>/dev/null || rm -f vmlinux; fi
R=$KD/root; mkdir -p "$R"/{bin,dev,proc,sys,tmp,test,usr/sbin,lib/modules,usr/share/smartmontools}
cp "$(command -v busybox)" "$R/bin/busybox"
# put DIR: copies (decompressed) each module file named on stdin into DIR, printing its name.
put() { while read -r f; do
    b=$(basename "$f"); case "$b" in
      *.xz) xz -dc "$f" >"$1/${b%.xz}"; b=${b%.xz};;
      *.zst) zstd -dcq "$f" >"$1/${b%.zst}"; b=${b%.zst};;
      *) cp "$f" "$1/";;
    esac; echo "$b"; done; }
for m in $MODULES; do modprobe -d "$KD" -S "$KVER" --show-depends "$m"; done |
  awk '$1 == "insmod" && !seen[$2]++ {print $2}' | put "$R/lib/modules" >"$R/lib/modules/load.list"
mkdir -p "$R/lib/modules/extra"
# Extra modules are inserted strictly: the CPU-specific crypto of arch/ (crc32c-intel wants SSE4.2, which
# TCG's CPU lacks) is left out, its generic fallback comes with it.
for m in $EXTRA; do modprobe -d "$KD" -S "$KVER" --show-depends "$m"; done |
  awk '$1 == "insmod" && $2 !~ /\/kernel\/arch\// && !seen[$2]++ {print $2}' | while read -r f; do
    b=$(basename "$f"); b=${b%.xz}; grep -qxF "${b%.zst}" "$R/lib/modules/load.list" || echo "$f"; done |
  put "$R/lib/modules/extra" >"$R/lib/modules/extra/extra.list"
# The NFS modules, apart from what the lists above load, for the NFS guest alone.
mkdir -p "$R/lib/modules/nfs"
for m in $NFSMOD; do modprobe -d "$KD" -S "$KVER" --show-depends "$m"; done |
  awk '$1 == "insmod" && $2 !~ /\/kernel\/arch\// && !seen[$2]++ {print $2}' | while read -r f; do
    b=$(basename "$f"); b=${b%.xz}; grep -qxF "${b%.zst}" "$R/lib/modules/load.list" "$R/lib/modules/extra/extra.list" || echo "$f"; done |
  put "$R/lib/modules/nfs" >"$R/lib/modules/nfs/nfs.list"
# pack PROGRAM...: copies each program and every library ldd names (a library the host lacks fails the build).
pack() { for p in "$@"; do cp "$p" "$R/usr/sbin/"
  if ldd "$p" | grep 'not found'; then echo "$p: libraries missing on the host" >&2; exit 1; fi
  ldd "$p" | grep -o '/[^ ]*' | while read -r l; do mkdir -p "$R${l%/*}"; cp -L "$l" "$R$l"; done; done; }
pack $(for b in smartctl nvme dmsetup mdadm mkfs.xfs mke2fs du tc; do command -v "$b"; done)
N=$KD/nfsx; rm -rf "$N"; for d in $NFSDEBS; do dpkg-deb -x "$d" "$N"; done
pack $(for p in $NFSPROGS; do echo "$N/$p"; done)
mkdir -p "$R/etc"; cp /etc/netconfig "$R/etc/"
rm -rf "$N" "$KD/debs"
[ -f /usr/share/smartmontools/drivedb.h ] && cp /usr/share/smartmontools/drivedb.h "$R/usr/share/smartmontools/"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$BASE.tmp"
mv "$BASE.tmp" "$BASE"
rm -rf "$R" lib
`

// vmInit is the guest's /init: load the modules, wait for the disks (five, and the NVMe namespaces
// beside the first), run the test program with its output on the second serial port (raw, away from
// kernel messages), print its exit status, power off.
func vmInit(disks int) string {
	return `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/sbin:/usr/bin HOME=/tmp TMPDIR=/tmp
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /lib/modules/load.list); do insmod /lib/modules/$m 2>/dev/null || echo "vmtest: insmod $m failed"; done
i=0; while [ "$(ls /sys/block | grep -cE '^(sd|nvme)')" -lt ` + strconv.Itoa(disks) + ` ] && [ $i -lt 200 ]; do usleep 100000; i=$((i + 1)); done
O=/dev/ttyS1; stty -F $O raw -echo
cd /tmp; /test/guest >$O 2>&1; echo "` + vmproto.MarkerExit + `$?" >$O
sync; poweroff -f
`
}

// bootGuest is the one preamble of the QEMU tests: the kernel and base initramfs (prepareVM), the
// guest program e2e/internal/<name> built for the VM, and one boot of it (boot, with onLine and nss).
func bootGuest(t *testing.T, name string, timeout time.Duration, onLine func(run *vmRun, line string), nss ...nvmeNamespace) (*vmKit, *vmRun) {
	t.Helper()
	if testing.Short() {
		t.Skipf("SKIPPED QEMU TEST (%s): -short", name)
	}
	kit := prepareVM(t)
	guest := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", guest, "../internal/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the guest program: %s", out)
	run := kit.boot(t, guest, timeout, onLine, nss...)
	t.Logf("VM run (kernel %s, boot to power-off): %v", kit.kver, run.took.Round(100*time.Millisecond))
	return kit, run
}

// bundle decodes the guest's bundle (the line after marker) into b, logs what the guest logged and
// requires that nothing stopped the guest.
func (r *vmRun) bundle(t *testing.T, marker string, b interface{ Common() *vmproto.Guest }) {
	t.Helper()
	if err := vmproto.Find(r.log, marker, b); err != nil {
		t.Fatalf("%v; guest output:\n%s", err, tail(r.log, 6000))
	}
	g := b.Common()
	for _, l := range g.Logs {
		t.Logf("guest log: %s", l)
	}
	require.Empty(t, g.Errors, "guest errors; guest output:\n%s", tail(r.log, 6000))
}

// vmRun is one boot.
type vmRun struct {
	dir     string
	testLog string
	qmp     string
	// trace is QEMU's own log of the commands its emulated disks received (qemuTraceEvents), each
	// line stamped with the host's wall clock.
	trace string
	// marks are the host times at which the guest's window markers (vmproto.MarkerWindow BEGIN/END name)
	// were first seen on the test serial line: the guest prints one, the host sees it at most a poll
	// later, on the same clock as the trace.
	marks map[string]time.Time
	log   string
	took  time.Duration
}

// nvmeNamespace is a namespace the emulated NVMe controller gets beside its first (its own drive, 64 MiB
// of 512-byte blocks): a guest that reads every namespace asks for some, the others keep one disk per
// kind (the guests count disks and namespaces).
type nvmeNamespace struct {
	nsid      int
	size      string // truncate's size of its image
	blockSize int    // logical and physical: QEMU formats it with the LBA format of that data size
}

// boot starts the VM with guest as the test program and waits for it to power off. onLine is called
// for each line the guest prints while it runs (it may talk to QMP; it must not block, or the window
// markers after that line are timed late).
func (k *vmKit) boot(t *testing.T, guest string, timeout time.Duration, onLine func(run *vmRun, line string), nss ...nvmeNamespace) *vmRun {
	t.Helper()
	return k.bootWith(t, guest, nil, timeout, onLine, nss...)
}

// bootWith is boot with more files in the guest's /test: files maps a name there to a host file (a test
// binary the guest program runs).
func (k *vmKit) bootWith(t *testing.T, guest string, files map[string]string, timeout time.Duration, onLine func(run *vmRun, line string), nss ...nvmeNamespace) *vmRun {
	t.Helper()
	run := &vmRun{dir: t.TempDir(), marks: map[string]time.Time{}}
	run.testLog = filepath.Join(run.dir, "test.log")
	run.qmp = filepath.Join(run.dir, "qmp.sock")
	run.trace = filepath.Join(run.dir, "trace.log")
	events := filepath.Join(run.dir, "trace-events")
	require.NoError(t, os.WriteFile(events, []byte(strings.Join(qemuTraceEvents, "\n")+"\n"), 0o644))
	ov := filepath.Join(run.dir, "ov")
	require.NoError(t, os.MkdirAll(filepath.Join(ov, "test"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ov, "init"), []byte(vmInit(5+len(nss))), 0o755))
	data, err := os.ReadFile(guest)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ov, "test", "guest"), data, 0o755))
	for name, src := range files {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(ov, "test", name), data, 0o755))
	}
	shell(t, 2*time.Minute, `cd "$OV" && find . | cpio -o -H newc --quiet | gzip -1 | cat "$BASE" - >"$RUN/initrd"
for d in nvme ide sata scsi; do truncate -s 64M "$RUN/$d.img"; done`, "OV="+ov, "BASE="+k.base, "RUN="+run.dir)

	accel := "tcg"
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
		f.Close()
		if cpu, _ := os.ReadFile("/proc/cpuinfo"); strings.Contains(string(cpu), " vmx") || strings.Contains(string(cpu), " svm") {
			accel = "kvm"
		}
	}
	img := func(name string) string {
		return "file=" + filepath.Join(run.dir, name+".img") + ",if=none,format=raw,id=" + name
	}
	args := []string{"-accel", accel, "-M", "pc", "-m", "1024", "-smp", "1", "-nodefaults", "-nographic", "-no-reboot",
		"-kernel", k.kernel, "-initrd", filepath.Join(run.dir, "initrd"), "-append", "console=ttyS0 panic=-1 quiet",
		"-serial", "file:" + filepath.Join(run.dir, "console.log"), "-serial", "file:" + run.testLog,
		"-qmp", "unix:" + run.qmp + ",server=on,wait=off",
		"-msg", "timestamp=on", "-trace", "events=" + events + ",file=" + run.trace,
		"-drive", img("nvme"), "-device", "nvme,id=nvme0,serial=DHNVME0,drive=nvme",
		"-drive", img("ide"), "-device", "ide-hd,drive=ide,bus=ide.0,serial=DHIDE0",
		"-device", "ahci,id=ahci",
		"-drive", img("sata"), "-device", "ide-hd,drive=sata,bus=ahci.0,model=ST4000DM004-2CV104,serial=ZFN0TEST,rotation_rate=7200,wwn=0x5000c500a1b2c3d4",
		"-device", "virtio-scsi-pci,id=vs0",
		"-drive", img("scsi"), "-device", "scsi-hd,drive=scsi,bus=vs0.0,serial=SCSITEST",
	}
	for _, ns := range nss {
		id := fmt.Sprintf("nvmens%d", ns.nsid)
		shell(t, time.Minute, `truncate -s "$SIZE" "$IMG"`, "SIZE="+ns.size, "IMG="+filepath.Join(run.dir, id+".img"))
		args = append(args, "-drive", img(id), "-device", fmt.Sprintf("nvme-ns,drive=%s,bus=nvme0,nsid=%d,logical_block_size=%d,physical_block_size=%d",
			id, ns.nsid, ns.blockSize, ns.blockSize))
	}
	if accel == "kvm" {
		args = append(args, "-cpu", "host")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.qemu, args...)
	out := &e2ekit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var seen int
	poll := func() {
		b, _ := os.ReadFile(run.testLog)
		lines := strings.Split(string(b), "\n")
		for ; seen < len(lines)-1; seen++ { // the last element is an unfinished line
			if m := strings.TrimSpace(lines[seen]); strings.HasPrefix(m, vmproto.MarkerWindow) {
				if _, dup := run.marks[m]; !dup {
					run.marks[m] = time.Now()
				}
			}
			if onLine != nil {
				onLine(run, lines[seen])
			}
		}
	}
	var werr error
loop:
	for {
		select {
		case werr = <-done:
			break loop
		case <-time.After(50 * time.Millisecond):
			poll()
		}
	}
	poll()
	took := time.Since(start)
	log, _ := os.ReadFile(run.testLog)
	if !strings.Contains(string(log), vmproto.MarkerExit) {
		console, _ := os.ReadFile(filepath.Join(run.dir, "console.log"))
		t.Fatalf("the VM ended without the guest's exit status (%v, after %v).\nqemu: %s\nconsole tail:\n%s\ntest log:\n%s",
			werr, took, out.String(), tail(string(console), 3000), tail(string(log), 3000))
	}
	run.log, run.took = string(log), took
	return run
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// qmp sends one command to the VM's monitor and waits for its answer.
func qmp(path string, command map[string]any) error {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	r := bufio.NewReader(c)
	enc := json.NewEncoder(c)
	reply := func() error {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return err
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if e, ok := m["error"]; ok {
				return fmt.Errorf("qmp: %s", e)
			}
			if _, ok := m["return"]; ok {
				return nil
			}
		}
	}
	if _, err := r.ReadBytes('\n'); err != nil { // greeting
		return err
	}
	if err := enc.Encode(map[string]any{"execute": "qmp_capabilities"}); err != nil {
		return err
	}
	if err := reply(); err != nil {
		return err
	}
	if err := enc.Encode(command); err != nil {
		return err
	}
	return reply()
}

// runGuestPackageTest builds the test binary of pkg (as name.test) and the guest program guestPkg for
// the guest, boots the guest with both, logs the guest's lines that keep selects, and requires that
// the tests (exact names separated by "|", as guestrx.RunPackageTest takes them), which the guest
// program runs from that binary, passed there.
func (k *vmKit) runGuestPackageTest(t *testing.T, guestPkg, pkg, name, tests string, timeout time.Duration, keep func(line string) bool) {
	t.Helper()
	dir := t.TempDir()
	bin, guest := filepath.Join(dir, name+".test"), filepath.Join(dir, "guest")
	for _, args := range [][]string{{"test", "-c", "-o", bin, pkg}, {"build", "-o", guest, guestPkg}} {
		build := exec.Command("go", args...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building %s: %s", args[len(args)-1], out)
	}
	run := k.bootWith(t, guest, map[string]string{name + ".test": bin}, timeout, nil)
	t.Logf("VM run (kernel %s, boot to power-off): %v", k.kver, run.took.Round(100*time.Millisecond))
	for line := range strings.Lines(run.log) {
		if keep(line) {
			t.Log(strings.TrimSpace(line))
		}
	}
	require.Contains(t, run.log, vmproto.MarkerExit+"0", "the test failed in the guest:\n%s", tail(run.log, 8000))
	for _, test := range strings.Split(tests, "|") {
		require.Contains(t, run.log, "--- PASS: "+test+" (", "%s did not run in the guest:\n%s", test, tail(run.log, 8000))
	}
}
