package nvmesubsys

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Subsystem is one NVMe subsystem as the host sees it.
type Subsystem struct {
	Name string // nvme-subsys0
	// NQN is subsysnqn: the subsystem's worldwide name (at most 223 bytes by the specification), its hw.id.
	NQN                     string
	Model, Serial, Firmware string
	// IOPolicy is how the multipath head spreads I/O (numa, round-robin, queue-depth); "" without
	// CONFIG_NVME_MULTIPATH.
	IOPolicy    string
	Controllers []Controller // by number
	Namespaces  []Namespace  // by name
}

// Controller is one controller of a subsystem: one path to each of its namespaces.
type Controller struct {
	Name      string // nvme1
	State     State
	Transport Transport
	// Address is where the controller is reached: a PCI address, or traddr=…,trsvcid=… on a fabric; ""
	// when the transport has none.
	Address string
}

// Namespace is one namespace the host sees: a multipath head (nvme<S>n<H>) with a path through each
// controller attached to it, or a namespace without a head (nvme<C>n<N>) whose one path is its
// controller.
type Namespace struct {
	Name  string // the block device: nvme0n1
	Paths []Path // by controller number
}

// Path is one namespace's path through one controller.
type Path struct {
	Name       string // nvme0c1n1; the namespace's own name for a namespace without a head
	Controller int    // index into Subsystem.Controllers
	ANA        ANAState
	ANAGroup   uint32 // valid when ANA != ANANone
}

var (
	reSubsystem  = regexp.MustCompile(`^nvme-subsys(\d+)$`)
	reController = regexp.MustCompile(`^nvme(\d+)$`)
	reHead       = regexp.MustCompile(`^nvme(\d+)n(\d+)$`)
	rePath       = regexp.MustCompile(`^nvme(\d+)c(\d+)n(\d+)$`)
)

const classDir = "class/nvme-subsystem"

// List returns the subsystems' names by number. A sysfs without the class (no NVMe driver loaded) is
// an empty list.
func List(sys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(sys, classDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if reSubsystem.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, byNumber)
	return names, nil
}

// byNumber orders kernel names by their number (nvme-subsys2 before nvme-subsys10).
func byNumber(a, b string) int { return cmp.Or(cmp.Compare(number(a), number(b)), cmp.Compare(a, b)) }

func number(name string) int {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(name[i:])
	return n
}

// ReadSubsystem reads the subsystem name. Any file that cannot be read or does not hold what the kernel
// writes makes the error, and the subsystem is then not to be reported: half a subsystem would count
// paths it does not have. A controller or path that vanishes while it is read (deleted) is left out.
func ReadSubsystem(sys fs.FS, name string) (Subsystem, error) {
	s := Subsystem{Name: name}
	dir := classDir + "/" + name
	var err error
	if s.NQN, err = text(sys, dir+"/subsysnqn", sanitize.HWID, true); err != nil {
		return s, err
	}
	for _, f := range []struct {
		file string
		kind sanitize.Kind
		to   *string
	}{{"model", sanitize.Model, &s.Model}, {"serial", sanitize.Serial, &s.Serial}, {"firmware_rev", sanitize.Firmware, &s.Firmware}, {"iopolicy", sanitize.Device, &s.IOPolicy}} {
		if *f.to, err = text(sys, dir+"/"+f.file, f.kind, false); err != nil {
			return s, err
		}
	}
	ents, err := fs.ReadDir(sys, dir)
	if err != nil {
		return s, fmt.Errorf("subsystem %s: %w", name, err)
	}
	heads := map[string]int{}
	for _, e := range ents {
		switch n := e.Name(); {
		case reController.MatchString(n):
			c, ok, err := readController(sys, dir+"/"+n, n)
			if err != nil {
				return s, err
			}
			if ok {
				s.Controllers = append(s.Controllers, c)
			}
		case reHead.MatchString(n):
			heads[n] = len(s.Namespaces)
			s.Namespaces = append(s.Namespaces, Namespace{Name: n})
		}
	}
	slices.SortFunc(s.Controllers, func(a, b Controller) int { return byNumber(a.Name, b.Name) })
	subsys := strconv.Itoa(number(name))
	for i, c := range s.Controllers {
		ents, err := fs.ReadDir(sys, dir+"/"+c.Name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since it was read
			}
			return s, fmt.Errorf("controller %s: %w", c.Name, err)
		}
		for _, e := range ents {
			n := e.Name()
			head := ""
			if m := rePath.FindStringSubmatch(n); m != nil {
				if m[1] != subsys {
					continue // not this subsystem's: the kernel names a path after its head's subsystem
				}
				head = "nvme" + m[1] + "n" + m[3]
			} else if reHead.MatchString(n) {
				head = n // no multipath head: the namespace hangs off its controller
			} else {
				continue
			}
			p, ok, err := readPath(sys, dir+"/"+c.Name+"/"+n, n, i)
			if err != nil {
				return s, err
			}
			if !ok {
				continue
			}
			j, seen := heads[head]
			if !seen {
				// A path whose head is not (yet, or no longer) listed still counts: its namespace is known by
				// the name the kernel gives the head.
				j = len(s.Namespaces)
				heads[head] = j
				s.Namespaces = append(s.Namespaces, Namespace{Name: head})
			}
			s.Namespaces[j].Paths = append(s.Namespaces[j].Paths, p)
		}
	}
	slices.SortFunc(s.Namespaces, func(a, b Namespace) int { return byNumber(a.Name, b.Name) })
	return s, nil
}

// readController reads one controller; ok is false when it vanished (being deleted).
func readController(sys fs.FS, dir, name string) (Controller, bool, error) {
	c := Controller{Name: name}
	var err error
	if c.State, err = parsed(sys, dir+"/state", ParseState); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return c, false, nil
		}
		return c, false, fmt.Errorf("controller %s: %w", name, err)
	}
	if c.Transport, err = parsed(sys, dir+"/transport", ParseTransport); err != nil {
		return c, false, fmt.Errorf("controller %s: %w", name, err)
	}
	// address is shown only where the transport has one.
	if c.Address, err = text(sys, dir+"/address", sanitize.NVMeAddress, false); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// readPath reads one path's ANA state; ok is false when it vanished.
func readPath(sys fs.FS, dir, name string, ctrl int) (Path, bool, error) {
	p := Path{Name: name, Controller: ctrl}
	var err error
	if p.ANA, err = parsed(sys, dir+"/ana_state", ParseANAState); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return p, false, fmt.Errorf("path %s: %w", name, err)
		}
		// No ANA (the attribute is hidden), or the path is gone: which one, its directory says.
		_, err := fs.Stat(sys, dir)
		return p, !errors.Is(err, fs.ErrNotExist), nil
	}
	if p.ANAGroup, err = parsed(sys, dir+"/ana_grpid", ParseANAGroup); err != nil {
		return p, false, fmt.Errorf("path %s: %w", name, err)
	}
	return p, true, nil
}

// parsed reads file and parses it; the error is the read's or the parser's.
func parsed[T any](sys fs.FS, file string, parse func([]byte) (T, error)) (T, error) {
	b, err := fs.ReadFile(sys, file)
	if err != nil {
		var zero T
		return zero, err
	}
	return parse(b)
}

// text reads a one-line attribute, sanitized for kind. An absent one is "" unless required.
func text(sys fs.FS, file string, kind sanitize.Kind, required bool) (string, error) {
	b, err := fs.ReadFile(sys, file)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	l, err := line(b)
	if err != nil {
		if len(b) == 1 && b[0] == '\n' && !required {
			return "", nil // an empty address (a loop controller's)
		}
		return "", fmt.Errorf("%s: %w", file, err)
	}
	// The subsystem's model, serial and firmware_rev are printed at their field's width, padded with spaces.
	return sanitize.Bytes(kind, bytes.TrimRight(l, " ")), nil
}

// Result is one subsystem's outcome of a Read: Err set means Subsystem is not to be reported.
type Result struct {
	Subsystem Subsystem
	Err       error
}

// Reader reads every subsystem under one deadline, up to a cap. Safe for concurrent use.
type Reader struct {
	sys     fs.FS
	timeout time.Duration
	limit   int
	guard   bounded.Guard
}

// NewReader returns a Reader of the sysfs tree sys (rooted at /sys) that reads at most limit subsystems
// (the lowest-numbered: a host on a fabric can see hundreds). timeout bounds one Read: NVMe's attributes
// answer from memory, so a read that overruns is a hung sysfs, reported as bounded.ErrTimeout (then
// bounded.ErrInFlight until it returns).
func NewReader(sys fs.FS, timeout time.Duration, limit int) *Reader {
	return &Reader{sys: sys, timeout: timeout, limit: limit}
}

// Read lists the subsystems and reads each up to the cap; omitted is how many were past it. The error
// is the listing's (or the deadline's).
func (r *Reader) Read(ctx context.Context) (results []Result, omitted int, err error) {
	type read struct {
		results []Result
		omitted int
	}
	v, err := bounded.Do(ctx, &r.guard, "nvme-subsystem", r.timeout, func() (read, error) {
		names, err := List(r.sys)
		if err != nil {
			return read{}, err
		}
		omitted := max(len(names)-r.limit, 0)
		names = names[:len(names)-omitted]
		out := make([]Result, len(names))
		for i, n := range names {
			s, err := ReadSubsystem(r.sys, n)
			if err != nil {
				err = fmt.Errorf("nvme subsystem %s: %w", n, err)
			}
			out[i] = Result{Subsystem: s, Err: err}
		}
		return read{out, omitted}, nil
	})
	return v.results, v.omitted, err
}
