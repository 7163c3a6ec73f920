/** mulberry32: a tiny, fast, seedable 32-bit PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number;
