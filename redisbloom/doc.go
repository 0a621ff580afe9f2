// Package redisbloom holds RedisBloom's filters, bit for bit: Filter and
// AtomicFilter are its scalable Bloom filter (the BF.* commands), which
// answer, grow, count and report BF.INFO as RedisBloom does and read and
// write its BF.SCANDUMP chunks byte for byte. A server speaking
// RedisBloom's protocol keeps its keys in them, and a program can take
// over filters dumped from RedisBloom and give them back.
//
// They cost k cache misses per item, as RedisBloom's do; new filters
// should use the one-hash filters of package ohbloom, which need one.
// Errors about sizes and bytes wrap the sentinels of package ohbloom
// (ohbloom.ErrInvalidConfig, ohbloom.ErrTooLarge, ohbloom.ErrCorrupt and
// the other decoding errors).
package redisbloom
