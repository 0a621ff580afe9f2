module github.com/ohbloom/ohbloom/bench

go 1.26

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/ohbloom/ohbloom v0.0.0
	github.com/zeebo/xxh3 v1.1.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/dgryski/go-metro v0.0.0-20200812162917-85c65e2d0165 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/linvon/cuckoo-filter v0.4.0 // indirect
	github.com/panmari/cuckoofilter v1.0.6 // indirect
	github.com/seiflotfy/cuckoofilter v0.0.0-20240715131351-a2f2c23f1771 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace github.com/ohbloom/ohbloom => ../
