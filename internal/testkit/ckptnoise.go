package testkit

import "math/rand/v2"

// NoiseFiles is how many files each burst of CheckpointNoise is unpacked into.
const NoiseFiles = 8

// NoiseScrape is what CheckpointNoise writes before one scrape.
type NoiseScrape struct {
	// Log is the bytes appended to the log.
	Log int
	// Burst is the burst the files written or removed belong to, each of FileSize bytes; Write lists
	// those of its files written now, Remove says that all of them are deleted now.
	Burst    int
	Write    []int
	FileSize int
	Remove   bool
	// Copy is the bytes appended to the one large copy.
	Copy int
}

// CheckpointNoise is issue 43's noise row on a filesystem of total bytes, scrape by scrape (200 of them):
// a log of total/5120 a scrape; bursts of 37–62 MiB unpacked over 3 scrapes into NoiseFiles files and
// deleted 4 scrapes after, at gaps of 15–40 scrapes; one copy of 46 % of the filesystem written over 10
// scrapes from scrape 100 and kept. The real-time test on a loop ext4 writes it and the learner's replay
// feeds the same writes as samples, so that the replay is the run it reproduces.
func CheckpointNoise(total int) []NoiseScrape {
	rng := rand.New(rand.NewPCG(43, 3))
	out := make([]NoiseScrape, 200)
	nextBurst, burst, burstSize := 10, 0, 0
	for i := range out {
		s := NoiseScrape{Log: total / 5120, Burst: burst}
		switch phase := i - nextBurst; {
		case phase == 0:
			burstSize = (37 + rng.IntN(26)) << 20
			fallthrough
		case phase >= 0 && phase < 3:
			s.FileSize = burstSize / NoiseFiles
			for k := range NoiseFiles {
				if k*3/NoiseFiles == phase {
					s.Write = append(s.Write, k)
				}
			}
		case phase == 7:
			s.FileSize, s.Remove = burstSize/NoiseFiles, true
			burst++
			nextBurst = i + 15 + rng.IntN(26)
		}
		if i >= 100 && i < 110 {
			s.Copy = total * 46 / 100 / 10
		}
		out[i] = s
	}
	return out
}
