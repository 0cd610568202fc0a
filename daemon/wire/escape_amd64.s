//go:build amd64 && !purego

#include "textflag.h"

// func escapeASCII(dst []byte, src []byte, tab *[128]escEntry) (written, read int)
//
// Registers: DI dst, SI src, R10 tab; AX written, BX read; R8 and R9 the
// largest written and read a step may start at (room - 256, len - 64);
// DX the chunk's unsafe-byte mask, R12 its non-ASCII mask; in a chunk, R13
// is where src[BX] lands in dst (it moves on by what each escape adds),
// CX an unsafe byte's index in the chunk, R11 and R12 scratch.
TEXT ·escapeASCII(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R8
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), R9
	MOVQ tab+48(FP), R10
	XORQ AX, AX
	XORQ BX, BX
	SUBQ $64, R9
	SUBQ $256, R8

	MOVQ $0x2020202020202020, R11
	MOVQ R11, X1
	VPBROADCASTQ X1, Y1
	MOVQ $0x2222222222222222, R11
	MOVQ R11, X2
	VPBROADCASTQ X2, Y2
	MOVQ $0x5c5c5c5c5c5c5c5c, R11
	MOVQ R11, X3
	VPBROADCASTQ X3, Y3

loop:
	CMPQ BX, R9
	JGT  done
	CMPQ AX, R8
	JGT  done
	VMOVDQU (SI)(BX*1), Y0
	VMOVDQU Y0, (DI)(AX*1)
	VPCMPGTB  Y0, Y1, Y4 // 0x20 > b, signed: a control byte, or b >= 0x80
	VPCMPEQB  Y0, Y2, Y5 // '"'
	VPCMPEQB  Y0, Y3, Y6 // '\\'
	VPOR      Y4, Y5, Y5
	VPOR      Y5, Y6, Y6
	VPMOVMSKB Y6, DX
	TESTL     DX, DX
	JNZ       chunk
	ADDQ      $32, AX
	ADDQ      $32, BX
	JMP       loop

chunk:
	VPMOVMSKB Y0, R12 // bytes from 0x80 up
	TESTL     R12, R12
	JNZ       single
	MOVQ      AX, R13

each:
	// The unsafe byte at CX: its escape where it lands, then the rest of
	// the chunk again after the escape (32 bytes from the next one: past
	// the chunk's end is harmless, the next step overwrites it).
	BSFL    DX, CX
	LEAQ    (SI)(BX*1), R11
	MOVBQZX (R11)(CX*1), R11
	SHLQ    $4, R11
	LEAQ    (R13)(CX*1), R12
	MOVQ    (R10)(R11*1), AX
	MOVQ    AX, (DI)(R12*1)
	MOVQ    8(R10)(R11*1), AX
	ADDQ    AX, R12
	LEAQ    -1(R13)(AX*1), R13
	LEAQ    1(SI)(BX*1), R11
	VMOVDQU (R11)(CX*1), Y7
	VMOVDQU Y7, (DI)(R12*1)
	LEAL    -1(DX), R11
	ANDL    R11, DX
	JNZ     each
	LEAQ    32(R13), AX
	ADDQ    $32, BX
	JMP     loop

single:
	// A chunk with a non-ASCII byte: its first unsafe byte alone, and
	// stop there if it is the non-ASCII one (its rune is the caller's).
	BSFL    DX, DX
	ADDQ    DX, AX
	ADDQ    DX, BX
	MOVBQZX (SI)(BX*1), CX
	CMPQ    CX, $0x80
	JAE     done
	SHLQ    $4, CX
	MOVQ    (R10)(CX*1), R11
	MOVQ    R11, (DI)(AX*1)
	ADDQ    8(R10)(CX*1), AX
	INCQ    BX
	JMP     loop

done:
	VZEROUPPER
	MOVQ AX, written+56(FP)
	MOVQ BX, read+64(FP)
	RET
