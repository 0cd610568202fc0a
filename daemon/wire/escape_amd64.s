//go:build amd64 && !purego

#include "textflag.h"

// func escapeASCII(dst []byte, src string, tab *[128]escEntry) (written, read int)
TEXT ·escapeASCII(SB), NOSPLIT, $0-64
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), R8
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), R9
	MOVQ tab+40(FP), R10
	XORQ AX, AX // written
	XORQ BX, BX // read
	SUBQ $32, R9 // read may go up to here and still load 32
	SUBQ $64, R8 // written may go up to here and still have the room

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
	VPCMPGTB Y0, Y1, Y4 // 0x20 > b, signed: a control byte, or b >= 0x80
	VPCMPEQB Y0, Y2, Y5 // '"'
	VPCMPEQB Y0, Y3, Y6 // '\\'
	VPOR     Y4, Y5, Y5
	VPOR     Y5, Y6, Y6
	VPMOVMSKB Y6, DX
	TESTL    DX, DX
	JNZ      found
	ADDQ     $32, AX
	ADDQ     $32, BX
	JMP      loop

found:
	BSFL    DX, DX
	ADDQ    DX, AX
	ADDQ    DX, BX
	MOVBQZX (SI)(BX*1), CX
	CMPQ    CX, $0x80
	JAE     done // non-ASCII: the caller decodes its rune
	SHLQ    $4, CX
	MOVQ    (R10)(CX*1), R11
	MOVQ    R11, (DI)(AX*1)
	ADDQ    8(R10)(CX*1), AX
	INCQ    BX
	JMP     loop

done:
	VZEROUPPER
	MOVQ AX, written+48(FP)
	MOVQ BX, read+56(FP)
	RET
