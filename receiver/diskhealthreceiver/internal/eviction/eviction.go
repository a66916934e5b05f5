// Package eviction reads the kubelet's eviction thresholds from its configuration file (a
// KubeletConfiguration, YAML or JSON) and computes how much a filesystem can still take before the
// kubelet starts evicting pods. It is pure: bytes in, thresholds out.
package eviction // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/eviction"

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The filesystem and memory signals of the kubelet's eviction manager.
const (
	MemoryAvailable  = "memory.available"
	NodeFSAvailable  = "nodefs.available"
	NodeFSInodesFree = "nodefs.inodesFree"
	ImageFSAvailable = "imagefs.available"
)

// Threshold is one signal's threshold: a share of the capacity or an absolute quantity.
type Threshold struct {
	// Percent is the share of the capacity, 0–1 (0 when Quantity is used).
	Percent float64
	// Quantity is an absolute amount (bytes, or inodes for an inode signal).
	Quantity uint64
}

// Of returns the threshold as an amount of capacity.
func (t Threshold) Of(capacity uint64) uint64 {
	if t.Quantity > 0 {
		return t.Quantity
	}
	return uint64(math.Round(t.Percent * float64(capacity)))
}

// Thresholds are the kubelet's hard and soft thresholds by signal; a signal without one is absent.
type Thresholds struct {
	Hard, Soft map[string]Threshold
}

// Defaults are the kubelet's built-in hard thresholds on Linux: memory.available<100Mi,
// nodefs.available<10%, imagefs.available<15%, nodefs.inodesFree<5%; no soft ones.
func Defaults() Thresholds {
	return Thresholds{Hard: map[string]Threshold{
		MemoryAvailable:  {Quantity: 100 << 20},
		NodeFSAvailable:  {Percent: 0.10},
		ImageFSAvailable: {Percent: 0.15},
		NodeFSInodesFree: {Percent: 0.05},
	}}
}

// config is the part of a KubeletConfiguration read here. JSON is YAML, so one decoder reads both.
type config struct {
	EvictionHard map[string]string `yaml:"evictionHard"`
	EvictionSoft map[string]string `yaml:"evictionSoft"`
	// MergeDefaultEvictionSettings (kubelet 1.34+): signals missing from evictionHard keep their
	// defaults instead of being switched off.
	MergeDefaultEvictionSettings bool `yaml:"mergeDefaultEvictionSettings"`
}

// Reader reads successive versions of a kubelet configuration file. It remembers, per signal, the
// last value it accepted, so that a value it refuses leaves that one in force — or, when none was ever
// accepted, the kubelet's default for the signal — instead of dropping the signal: one bad threshold
// must not silently lift a limit (issue 31). The zero Reader is ready.
type Reader struct {
	// good holds the last accepted value per set and signal; nil is a signal switched off ("0%").
	good [2]map[string]*Threshold
}

// Parse reads the thresholds of a kubelet configuration file. As the kubelet does, a file without
// evictionHard has the defaults; one with evictionHard has exactly the signals it names (plus the
// defaults of the others when mergeDefaultEvictionSettings is true). A threshold that cannot be read
// is reported and its fallback stays in force; the others are read. A file that is no configuration
// at all gives no thresholds (nil maps) and the error.
func (r *Reader) Parse(data []byte) (Thresholds, error) {
	var c config
	if err := yaml.Unmarshal(data, &c); err != nil {
		return Thresholds{}, fmt.Errorf("kubelet configuration: %w", err)
	}
	th := Thresholds{Hard: map[string]Threshold{}, Soft: map[string]Threshold{}}
	if c.EvictionHard == nil || c.MergeDefaultEvictionSettings {
		th.Hard = Defaults().Hard
	}
	var errs []error
	for i, set := range []struct {
		name     string
		in       map[string]string
		out      map[string]Threshold
		defaults map[string]Threshold
	}{{"evictionHard", c.EvictionHard, th.Hard, Defaults().Hard}, {"evictionSoft", c.EvictionSoft, th.Soft, nil}} {
		if r.good[i] == nil {
			r.good[i] = map[string]*Threshold{}
		}
		for _, signal := range sortedKeys(set.in) {
			t, err := ParseThreshold(set.in[signal])
			if err != nil {
				errs = append(errs, fmt.Errorf("kubelet configuration: %s[%q]: %w", set.name, signal, err))
				t = r.fallback(i, signal, set.defaults)
			} else {
				r.good[i][signal] = t
			}
			if t == nil {
				delete(set.out, signal)
				continue
			}
			set.out[signal] = *t
		}
	}
	return th, errors.Join(errs...)
}

// fallback is what stays in force for a refused value of a signal in set: the last value accepted,
// else the default (a soft threshold has none).
func (r *Reader) fallback(set int, signal string, defaults map[string]Threshold) *Threshold {
	if last, ok := r.good[set][signal]; ok {
		return last
	}
	if d, ok := defaults[signal]; ok {
		return &d
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// suffixes are the Kubernetes quantity suffixes, binary and decimal.
var suffixes = map[string]float64{
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
	"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "": 1,
}

// ParseThreshold reads "10%" or a Kubernetes quantity ("100Mi", "1.5Gi", "500M", "2e9", "1024"), and
// refuses what the kubelet refuses (a percentage outside 0–100, a quantity that is not positive) as
// well as what it would misread (NaN, a quantity past 2^64). As in the kubelet, "0%" and "100%" switch
// the signal off: the result is nil.
func ParseThreshold(s string) (*Threshold, error) {
	s = strings.TrimSpace(s)
	if s == "0%" || s == "100%" {
		return nil, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v >= 0 && v <= 100) {
			return nil, fmt.Errorf("bad percentage %q", s)
		}
		return &Threshold{Percent: v / 100}, nil
	}
	num := strings.TrimRightFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' && r != 'e' })
	mult, ok := suffixes[s[len(num):]]
	if !ok || num == "" {
		return nil, fmt.Errorf("bad quantity %q", s)
	}
	v, _, err := big.ParseFloat(num, 10, 64, big.ToNearestEven)
	if err != nil || v.Sign() <= 0 {
		return nil, fmt.Errorf("bad quantity %q (the kubelet takes only a positive one)", s)
	}
	f, _ := v.Float64()
	q := f * mult
	if q >= math.MaxUint64 || math.IsInf(q, 0) {
		return nil, fmt.Errorf("quantity %q out of range", s)
	}
	return &Threshold{Quantity: uint64(math.Ceil(q))}, nil
}
