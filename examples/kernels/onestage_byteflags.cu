// One-stage all-reduce whose barriers are bytes of one 64-bit flag word.
//
// Every rank reads every peer's input and writes the sum. Before reading,
// the ranks meet at a start barrier; after, at an end barrier, so that no
// rank rewrites its input while a peer still reads it. Each rank owns, per
// block, a 64-bit start word and a 64-bit end word; rank r signals by
// storing the call's flag into byte r of every peer's word, and waits by
// reading its own word as a whole until every byte holds the flag.
//
// The PTX memory model does not make these accesses morally strong: the
// byte stores and the 8-byte load overlap without having the same size, so
// the waiting load races with every peer's store, and nothing it reads
// orders the peers' inputs before the sums.
#define MAX_BLOCKS 64

struct Flags {
  unsigned long long start[MAX_BLOCKS];
  unsigned long long end[MAX_BLOCKS];
};

// Call is passed by value.
struct Call {
  int rank;
  int world;
  int n;
  unsigned char flag;  // 1, 2, ... one more each call
};

__device__ void signal_byte(unsigned long long* peer_word, int rank, unsigned char flag) {
  volatile unsigned char* bytes = (volatile unsigned char*)peer_word;
  bytes[rank] = flag;
}

__device__ void wait_word(unsigned long long* own_word, int world, unsigned char flag) {
  unsigned long long want = 0;
  for (int r = 0; r < world; r++) want |= (unsigned long long)flag << (8 * r);
  unsigned long long mask = world >= 8 ? ~0ull : (1ull << (8 * world)) - 1;
  volatile unsigned long long* w = own_word;
  while ((*w & mask) != want) {
  }
}

extern "C" __global__ void onestage_byteflags(float* const* bufs, Flags* const* flags, float* out, Call c) {
  // Start barrier: thread t signals peer t and waits for its own word.
  if (threadIdx.x < c.world) {
    signal_byte(&flags[threadIdx.x]->start[blockIdx.x], c.rank, c.flag);
    wait_word(&flags[c.rank]->start[blockIdx.x], c.world, c.flag);
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < c.n; i += gridDim.x * blockDim.x) {
    float s = 0.f;
    for (int r = 0; r < c.world; r++) s += bufs[r][i];
    out[i] = s;
  }
  __syncthreads();
  // End barrier: no rank leaves (and rewrites its input) before every
  // peer has read it.
  if (threadIdx.x < c.world) {
    signal_byte(&flags[threadIdx.x]->end[blockIdx.x], c.rank, c.flag);
    wait_word(&flags[c.rank]->end[blockIdx.x], c.world, c.flag);
  }
}
