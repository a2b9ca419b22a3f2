package ptxcheck

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/symmem/symmem/internal/longtest"
)

// peersDir is the PTX of shipped all-reduce kernels beside the repository,
// which the harnesses of examples/peers name.
const peersDir = "../../shared/peers"

// explained is one finding of a shipped kernel that docs/peers.md
// explains: its kind and text its title and details must hold, and for
// a race whose sites may be any of several, the sites its title may name.
type explained struct {
	name  string // the finding's name in docs/peers.md
	kind  string
	has   []string
	sites []string // when not empty, every "at SITE" of the title is one of them
}

// matches reports whether f is the explained finding.
func (e explained) matches(f *Finding) bool {
	if f.Kind != e.kind {
		return false
	}
	if len(e.sites) > 0 {
		at := strings.Split(f.Title, " at ")[1:]
		if len(at) == 0 {
			return false
		}
		for _, a := range at {
			site, _, _ := strings.Cut(a, " ")
			if !slices.Contains(e.sites, site) {
				return false
			}
		}
	}
	details := "\n" + strings.Join(f.Details, "\n")
	for _, title := range titles(f) {
		if containsAll(title+details, e.has) {
			return true
		}
	}
	return false
}

// titles is a finding's title, and for a race its mirror too (the two
// sites in the other order), since a race and its mirror are one finding:
// the start barrier's race (A: the host's write, then a peer's load) and
// the end barrier's (B: a peer's load, then the host's next write) of the
// same lines are reported once.
func titles(f *Finding) []string {
	const between = "data race between "
	rest, ok := strings.CutPrefix(f.Title, between)
	if f.Kind != "race" || !ok {
		return []string{f.Title}
	}
	a, b, ok := strings.Cut(rest, " and ")
	if !ok {
		return []string{f.Title}
	}
	return []string{f.Title, between + b + " and " + a}
}

// containsAll reports whether text holds every one of subs.
func containsAll(text string, subs []string) bool {
	for _, s := range subs {
		if !strings.Contains(text, s) {
			return false
		}
	}
	return true
}

// mp is where the PTX's .file lines put MSCCL++'s device headers.
const mp = "../mscclpp/include/mscclpp/"

// jit is where the PTX's .file lines put SGLang JIT's sources.
const jit = "../sglang_jit/python/sglang/jit_kernel/"

// fi is where the PTX's .file lines put FlashInfer's headers.
const fi = "../flashinfer/include/flashinfer/comm/"

// The findings of vLLM's and SGLang's custom all-reduce (docs/peers.md,
// "vLLM" and "SGLang"), by the CUDA lines of their accesses.
var (
	vllmStart = explained{"start", "race", []string{"between the host's write (store) and the load at ../vllm/csrc/custom_all_reduce.cuh:29"}, nil}
	vllmEnd   = explained{"end", "race", []string{"between the load at ../vllm/csrc/custom_all_reduce.cuh:29", "and the host's write (store)"}, nil}
	vllmFlag  = explained{"flag", "race", []string{"../vllm/csrc/custom_all_reduce.cuh:223", "../vllm/csrc/custom_all_reduce.cuh:240"}, nil}
	vllmHang  = explained{"flag", "hang", []string{"custom_all_reduce.cuh:191 (inlined at ../vllm/csrc/custom_all_reduce.cuh:234)"}, nil}
	vllmTmp   = explained{"tmp", "race", []string{"between the load at ../vllm/csrc/custom_all_reduce.cuh:362 and the store at ../vllm/csrc/custom_all_reduce.cuh:346"}, nil}

	sglangStart     = explained{"start", "race", []string{"between the host's write (store) and the load at ../sglang/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:2"}, nil}
	sglangEnd       = explained{"end", "race", []string{"between the load at ../sglang/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:2", "and the host's write (store)"}, nil}
	fiVLLMStart     = explained{"start", "race", []string{"between the host's write (store) and the load at ../flashinfer/include/flashinfer/comm/vllm_custom_all_reduce.cuh:21"}, nil}
	fiVLLMEnd       = explained{"end", "race", []string{"between the load at ../flashinfer/include/flashinfer/comm/vllm_custom_all_reduce.cuh:21", "and the host's write (store)"}, nil}
	fiVLLMTmp       = explained{"tmp", "race", []string{"between the load at ../flashinfer/include/flashinfer/comm/vllm_custom_all_reduce.cuh:284 and the store at ../flashinfer/include/flashinfer/comm/vllm_custom_all_reduce.cuh:269"}, nil}
	torchStartLoad  = explained{"start", "race", []string{"between the host's write (store) and the load at ", "ATen/native/cuda/MemoryAccess.cuh:633"}, nil}
	torchStartStore = explained{"start", "race", []string{"between the host's write (store) and the store at ", "ATen/native/cuda/MemoryAccess.cuh:666"}, nil}
	// FlashInfer's TensorRT-LLM kernels: block_barrier releases its flag
	// with no __syncthreads after the block's stores (docs/peers.md, F):
	// the copy or push of the input and the two-shot's reduced slice race
	// with the peers' reads of them, which may read them stale.
	trtllmSites = []string{
		fi + "trtllm_allreduce.cuh:1227", fi + "trtllm_allreduce.cuh:1231", // one-shot push, copy
		fi + "trtllm_allreduce.cuh:1360", fi + "trtllm_allreduce.cuh:1363", // two-shot push, copy
		fi + "trtllm_allreduce.cuh:1434", fi + "trtllm_allreduce.cuh:1438", // two-shot gather's copy to the output
		fi + "../vec_dtypes.cuh:1814", fi + "../vec_dtypes.cuh:1820", // vec_t<bf16, 8> load, store
		fi + "../vec_dtypes.cuh:2202", fi + "../vec_dtypes.cuh:2208", // vec_t<float, 4> load, store
		fi + "trtllm_allreduce.cuh:909", // one_shot_all_reduce_norm_kernel's copy of the input
	}
	trtllmRace = explained{name: "block-barrier", kind: "race", sites: trtllmSites}
	// FlashInfer's TensorRT-LLM Lamport kernel clears the buffer of the
	// call before for its own token count: when the count changes, values
	// of an older call stay in the buffer and read as arrived (L).
	lamportStale = explained{name: "stale-clear", kind: "result"}
	trtllmResult = explained{name: "block-barrier", kind: "result"}
	// SGLang JIT's pull kernels: a relaxed start barrier (A), a relaxed
	// one-shot end barrier (B), and the start barrier's atom.global.add at
	// the default .gpu scope on a peer's semaphore (G).
	jitPullStartLoad  = explained{"start", "race", []string{"between the host's write (store) and the load at " + jit + "include/sgl_kernel/vec.cuh:86"}, nil}
	jitPullStartStore = explained{"start", "race", []string{"between the host's write (store) and the store at " + jit + "include/sgl_kernel/vec.cuh:90"}, nil}
	jitPullEnd        = explained{"end", "race", []string{"between the load at " + jit + "include/sgl_kernel/vec.cuh:86 and the host's write (store)"}, nil}
	jitPullAtom       = explained{"gpu-scope", "race", []string{jit + "include/sgl_kernel/distributed/common.cuh:29"}, []string{
		jit + "include/sgl_kernel/distributed/common.cuh:16", jit + "include/sgl_kernel/distributed/common.cuh:18",
		jit + "include/sgl_kernel/distributed/common.cuh:27", jit + "include/sgl_kernel/distributed/common.cuh:29",
	}}
	// MSCCL++'s LL packets: a vector access is one access per element in
	// the PTX model, so a packet's flag and data may be read torn (H); the
	// result is wrong, with no race (the accesses are strong).
	torn = explained{"torn", "result", nil, nil}
	// MSCCL++'s packet kernel writes its result packets with a plain
	// 16-byte store, which races with the peers' volatile polls (I).
	plainPacket = explained{"plain-packet", "race", []string{mp + "memory_channel_device.hpp:84"}, []string{
		mp + "memory_channel_device.hpp:84", mp + "packet_device.hpp:43", mp + "packet_device.hpp:71",
	}}
	// MSCCL++'s packet and full-mesh kernels copy their channel handles
	// into a __shared__ array in every warp with only __syncwarp after: a
	// race of stores of the same bytes, benign (J). Shared accesses carry
	// no line, so the race is named by its kernel.
	sharedHandles = explained{"shared-handles", "race", []string{"of kernel _ZN7mscclpp10collective", "two threads of block"}, nil}
	sglangTmp     = explained{"tmp", "race", []string{"between the load at ../sglang/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:420 and the store at ../sglang/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:405"}, nil}
)

// resultSeeds is how many seeds the default run of a family tries, one
// after the other, for a wrong result it must find: a wrong result
// shows only in the runs whose schedule lets the stale read happen (a
// warp runs in lockstep until its lanes part, so a whole warp must lag,
// not one thread; at the small sizes one in 20 to 30 seeds).
const resultSeeds = 60

// sm80and100 names the compute_80 and compute_100 PTX of a family whose
// entries have the same names there.
var sm80and100 = []string{"_sm80.ptx", "_sm100.ptx"}

// lamportSmall is the small size of FlashInfer's Lamport harnesses: one
// token of 256 elements (the smallest hidden size the host sends to the
// Lamport kernel), one block of 32 threads.
var lamportSmall = map[string]Expr{"tokens": "1", "hidden": "256"}

// peerFamilies are the kernel families of ../shared/peers with a harness
// in examples/peers: every finding a run makes must be one the docs
// explain, and the default run (the first harness at the small vars) must
// make the findings of must.
var peerFamilies = []struct {
	family    string
	harnesses []string // the first runs by default
	small     map[string]Expr
	// smallWorlds are the worlds of the default run of a harness that
	// names several (nil: the harness's).
	smallWorlds []int
	archs       []string // PTX of other architectures with the same entry names (SYMMEM_LONG=1 runs them too)
	// bigPTX marks a family whose PTX alone takes the race detector tens
	// of seconds to parse: the default run under -race leaves it out.
	bigPTX    bool
	explained []explained
	must      []explained
}{
	{
		family:    "vllm 1stage",
		harnesses: []string{"vllm_1stage_w2", "vllm_1stage_w4", "vllm_1stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{vllmStart, vllmEnd, vllmFlag, vllmHang},
		must:      []explained{vllmStart, vllmEnd, vllmFlag},
	},
	{
		family:    "vllm 2stage",
		harnesses: []string{"vllm_2stage_w2", "vllm_2stage_w4", "vllm_2stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{vllmStart, vllmTmp},
		must:      []explained{vllmStart, vllmTmp},
	},
	{
		family:    "sglang 1stage",
		harnesses: []string{"sglang_1stage_w2", "sglang_1stage_w4", "sglang_1stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{sglangStart, sglangEnd},
		must:      []explained{sglangStart, sglangEnd},
	},
	{
		family:    "sglang 2stage",
		harnesses: []string{"sglang_2stage_w2", "sglang_2stage_w4", "sglang_2stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{sglangStart, sglangTmp},
		must:      []explained{sglangStart, sglangTmp},
	},
	{
		family:    "pytorch one_shot",
		harnesses: []string{"pytorch_one_shot_w2", "pytorch_one_shot_w4", "pytorch_one_shot_w8"},
		small:     map[string]Expr{"n": "256"},
	},
	{
		family:    "pytorch two_shot",
		harnesses: []string{"pytorch_two_shot_w2", "pytorch_two_shot_w4", "pytorch_two_shot_w8"},
		small:     map[string]Expr{"n": "256"},
	},
	{
		family:    "pytorch two_shot inplace",
		harnesses: []string{"pytorch_inplace_w2", "pytorch_inplace_w4", "pytorch_inplace_w8"},
		small:     map[string]Expr{"n": "256"},
		explained: []explained{torchStartLoad, torchStartStore},
		must:      []explained{torchStartLoad, torchStartStore},
	},
	{
		family:      "pytorch barrier, put_signal, wait_signal",
		harnesses:   []string{"pytorch_signal"},
		smallWorlds: []int{2},
	},
	{
		family:    "sglang_jit one-shot push",
		harnesses: []string{"sglang_jit_push_w2", "sglang_jit_push_w4", "sglang_jit_push_w8"},
		small:     map[string]Expr{"n": "256", "cta": "2"},
	},
	{
		family:    "sglang_jit one-shot push, PDL",
		harnesses: []string{"sglang_jit_push_pdl_w2", "sglang_jit_push_pdl_w4", "sglang_jit_push_pdl_w8"},
		small:     map[string]Expr{"n": "256", "cta": "2"},
	},
	{
		family:    "flashinfer trtllm one-shot copy",
		harnesses: []string{"trtllm_oneshot_copy_w2", "trtllm_oneshot_copy_w4", "trtllm_oneshot_copy_w8"},
		small:     map[string]Expr{"n": "256"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "flashinfer trtllm one-shot memcpy",
		harnesses: []string{"trtllm_oneshot_memcpy_w2", "trtllm_oneshot_memcpy_w4", "trtllm_oneshot_memcpy_w8"},
		small:     map[string]Expr{"n": "256"},
		archs:     sm80and100,
	},
	{
		family:    "flashinfer trtllm one-shot push",
		harnesses: []string{"trtllm_oneshot_push_w2", "trtllm_oneshot_push_w4", "trtllm_oneshot_push_w8"},
		small:     map[string]Expr{"n": "256"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "flashinfer trtllm two-shot copy",
		harnesses: []string{"trtllm_twoshot_copy_w2", "trtllm_twoshot_copy_w4", "trtllm_twoshot_copy_w8"},
		small:     map[string]Expr{"n": "256*world"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "flashinfer trtllm two-shot memcpy",
		harnesses: []string{"trtllm_twoshot_memcpy_w2", "trtllm_twoshot_memcpy_w4", "trtllm_twoshot_memcpy_w8"},
		small:     map[string]Expr{"n": "256*world"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "flashinfer trtllm two-shot push",
		harnesses: []string{"trtllm_twoshot_push_w2", "trtllm_twoshot_push_w4", "trtllm_twoshot_push_w8"},
		small:     map[string]Expr{"n": "256*world"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "sglang_jit pull one-shot",
		harnesses: []string{"sglang_jit_pull_one_w2", "sglang_jit_pull_one_w4", "sglang_jit_pull_one_w8"},
		small:     map[string]Expr{"n": "512"},
		explained: []explained{jitPullStartLoad, jitPullEnd, jitPullAtom},
		must:      []explained{jitPullStartLoad, jitPullEnd, jitPullAtom},
	},
	{
		family:    "sglang_jit pull two-shot",
		harnesses: []string{"sglang_jit_pull_two_w2", "sglang_jit_pull_two_w4", "sglang_jit_pull_two_w8"},
		small:     map[string]Expr{"n": "256*world"},
		explained: []explained{jitPullStartLoad, jitPullStartStore, jitPullAtom},
		must:      []explained{jitPullStartLoad, jitPullStartStore, jitPullAtom},
	},
	{
		family:    "mscclpp rsag",
		harnesses: []string{"mscclpp_rsag_w2", "mscclpp_rsag_w4", "mscclpp_rsag_w8"},
		small:     map[string]Expr{"n": "128*world", "blocks": "2", "threads": "64"},
		archs:     sm80and100,
	},
	{
		family:    "mscclpp allpair",
		harnesses: []string{"mscclpp_allpair_w2", "mscclpp_allpair_w4", "mscclpp_allpair_w8"},
		small:     map[string]Expr{"n": "256", "blocks": "world - 1", "threads": "32*(world - 1)"},
		archs:     sm80and100,
		explained: []explained{torn},
		must:      []explained{torn},
	},
	{
		family:    "mscclpp packet",
		harnesses: []string{"mscclpp_packet_w2", "mscclpp_packet_w4", "mscclpp_packet_w8"},
		small:     map[string]Expr{"n": "64*world", "blocks": "world - 1", "threads": "32"},
		archs:     sm80and100,
		explained: []explained{plainPacket, torn, sharedHandles},
		must:      []explained{plainPacket},
	},
	{
		family:    "mscclpp fullmesh",
		bigPTX:    true,
		harnesses: []string{"mscclpp_fullmesh_w2", "mscclpp_fullmesh_w4", "mscclpp_fullmesh_w8"},
		small:     map[string]Expr{"n": "64*world", "blocks": "2", "threads": "64"},
		explained: []explained{sharedHandles},
		must:      []explained{sharedHandles},
	},
	{
		family:    "flashinfer trtllm lamport all-reduce + RMSNorm",
		harnesses: []string{"flashinfer_trtllm_lamport_norm_w2", "flashinfer_trtllm_lamport_norm_w4", "flashinfer_trtllm_lamport_norm_w8"},
		small:     lamportSmall,
		archs:     []string{"_sm100.ptx"}, // empty at compute_80 (its body needs __CUDA_ARCH__ >= 900)
	},
	{
		family:    "flashinfer trtllm lamport all-reduce + RMSNorm, token count changing",
		harnesses: []string{"flashinfer_trtllm_lamport_norm_tokens_w2"},
		small:     map[string]Expr{"tokens": "2", "hidden": "256"},
		archs:     []string{"_sm100.ptx"},
		explained: []explained{lamportStale},
		must:      []explained{lamportStale},
	},
	{
		family:    "flashinfer trtllm fused all-reduce + RMSNorm",
		harnesses: []string{"flashinfer_trtllm_fused_norm_w2", "flashinfer_trtllm_fused_norm_w4", "flashinfer_trtllm_fused_norm_w8"},
		small:     map[string]Expr{"tokens": "2", "hidden": "128"},
		archs:     sm80and100,
		explained: []explained{trtllmRace, trtllmResult},
		must:      []explained{trtllmRace, trtllmResult},
	},
	{
		family:    "flashinfer vllm 1stage",
		harnesses: []string{"flashinfer_vllm_1stage_w2", "flashinfer_vllm_1stage_w4", "flashinfer_vllm_1stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{fiVLLMStart, fiVLLMEnd},
		must:      []explained{fiVLLMStart, fiVLLMEnd},
	},
	{
		family:    "flashinfer vllm 2stage",
		harnesses: []string{"flashinfer_vllm_2stage_w2", "flashinfer_vllm_2stage_w4", "flashinfer_vllm_2stage_w8"},
		small:     map[string]Expr{"packs": "64"},
		archs:     sm80and100,
		explained: []explained{fiVLLMStart, fiVLLMTmp},
		must:      []explained{fiVLLMStart, fiVLLMTmp},
	},
}

// TestPeers runs the harnesses of examples/peers on the shipped kernels of
// ../shared/peers (skipped when it is absent): by default each family's
// first harness at small sizes and one seed; with SYMMEM_LONG=1 every
// harness (every world the entries are built for) at the harness's own
// sizes, 3 seeds (under the race detector: worlds 2 and 4 at the small
// sizes, 1 seed), and the first harness at the small sizes with the
// compute_80 and compute_100 PTX of the families whose entry names are the
// same there.
// Every finding must be one docs/peers.md explains, and the runs of the
// first harness at the small sizes must make the findings the docs say
// they make.
func TestPeers(t *testing.T) {
	if _, err := os.Stat(peersDir); err != nil {
		t.Skipf("no shipped kernels at %s (a fresh clone has none): %v", peersDir, err)
	}
	sources := map[string]*Source{}
	// Under the race detector the blocks run at most 128 threads (the
	// kernels' barriers use the first few; a 512-thread block took
	// seconds a run there); without it, the host's shapes.
	maxThreads := 0
	if raceOn {
		maxThreads = 128
	}
	for _, fam := range peerFamilies {
		t.Run(fam.family, func(t *testing.T) {
			if fam.bigPTX && raceOn && !longtest.Enabled() {
				t.Skip("its PTX takes the race detector tens of seconds to parse: it runs without -race, and with SYMMEM_LONG=1")
			}
			type run struct {
				harness, arch string
				seeds         int
				vars          map[string]Expr
				worlds        []int
			}
			runs := []run{{fam.harnesses[0], "", 1, fam.small, fam.smallWorlds}}
			if longtest.Enabled() {
				runs = runs[:0]
				for _, h := range fam.harnesses {
					if raceOn && strings.HasSuffix(h, "_w8") {
						continue // a world of 8 under the race detector takes minutes a family
					}
					if raceOn {
						runs = append(runs, run{h, "", 1, fam.small, fam.smallWorlds})
					} else {
						runs = append(runs, run{h, "", 3, nil, nil})
					}
				}
				for _, a := range fam.archs {
					runs = append(runs, run{fam.harnesses[0], a, 1, fam.small, fam.smallWorlds})
				}
				if raceOn {
					t.Log("the race detector is on: the harnesses of worlds 2 and 4 at the small sizes, 1 seed (every harness at its own size, 3 seeds, runs without -race)")
				}
			}
			for _, r := range runs {
				p, err := LoadHarness("../examples/peers/" + r.harness + ".json")
				if err != nil {
					t.Fatal(err)
				}
				name := r.harness
				if r.arch != "" {
					p.PTX = strings.Replace(p.PTX, "_sm90.ptx", r.arch, 1)
					name += " at " + strings.TrimSuffix(strings.TrimPrefix(r.arch, "_"), ".ptx")
				}
				src := sources[p.PTX]
				if src == nil {
					src = load(t, p.PTX)
					sources[p.PTX] = src
				}
				rep, err := RunProgram(p, src, Options{Worlds: r.worlds, Seeds: r.seeds, Vars: r.vars, Jobs: 2, MaxThreads: maxThreads})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, f := range rep.Findings {
					ok := false
					for _, e := range fam.explained {
						ok = ok || e.matches(f)
					}
					if !ok {
						t.Errorf("%s: a finding docs/peers.md does not explain: %s\n%s", name, f.Title, strings.Join(f.Details, "\n"))
					}
				}
				if r.harness != fam.harnesses[0] || r.seeds != 1 {
					continue // what a sampled run of another world or size finds may differ (docs/peers.md)
				}
				for _, e := range fam.must {
					found := false
					for _, f := range rep.Findings {
						found = found || e.matches(f)
					}
					for seed := uint64(1); !found && e.kind == "result" && seed < resultSeeds; seed++ {
						more, err := RunProgram(p, src, Options{Worlds: r.worlds, FirstSeed: seed, Seeds: 1, Vars: r.vars, MaxThreads: maxThreads})
						if err != nil {
							t.Fatalf("%s seed %d: %v", name, seed, err)
						}
						for _, f := range more.Findings {
							found = found || e.matches(f)
						}
					}
					if !found {
						t.Errorf("%s: no %s finding (%s %q)", name, e.name, e.kind, e.has)
					}
				}
			}
		})
	}
}
