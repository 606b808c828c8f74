# strata_layer(NAME [DEPS...]): one static library per folder under src/.
#
# ISA-specific files are named after their kernel set's level and compiled for it; files of the
# other architecture are left out of the build:
#   x86-64:  *_avx2.cpp  *_avxvnni.cpp  *_avx512.cpp  *_amx.cpp
#   aarch64: *_neon.cpp  *_dotprod.cpp  *_i8mm.cpp
set(STRATA_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)
set(STRATA_AVXVNNI_FLAGS ${STRATA_AVX2_FLAGS} -mavxvnni)
set(STRATA_AVX512_FLAGS ${STRATA_AVX2_FLAGS} -mavx512f -mavx512bw -mavx512vl -mavx512dq
    -mavx512vnni -mavx512bf16 -mavx512vbmi)
set(STRATA_AMX_FLAGS ${STRATA_AVX512_FLAGS} -mamx-tile -mamx-int8)
set(STRATA_NEON_FLAGS -march=armv8-a)
set(STRATA_DOTPROD_FLAGS -march=armv8.2-a+dotprod)
set(STRATA_I8MM_FLAGS -march=armv8.2-a+dotprod+i8mm)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(STRATA_ARCH aarch64)
else()
  set(STRATA_ARCH x86_64)
endif()
# aarch64 GCC fuses a * b + c into one rounding by default (x86-64's baseline has no FMA, so
# scalar code never does there): the scalar references of two layouts would then differ in the
# last bit depending on which products the compiler fused. Fusing stays explicit (intrinsics).
if(STRATA_ARCH STREQUAL "aarch64")
  add_compile_options(-ffp-contract=off)
endif()

# The ISA files of `srcs` for this architecture get their flags; the other architecture's are
# removed from the list named by `out`.
function(strata_isa_sources out)
  set(kept)
  foreach(src ${ARGN})
    if(src MATCHES "_(avx2|avxvnni|avx512|amx)\\.cpp$")
      if(NOT STRATA_ARCH STREQUAL "x86_64")
        continue()
      endif()
    elseif(src MATCHES "_(neon|dotprod|i8mm)\\.cpp$")
      if(NOT STRATA_ARCH STREQUAL "aarch64")
        continue()
      endif()
    endif()
    foreach(isa avx2 avxvnni avx512 amx neon dotprod i8mm)
      if(src MATCHES "_${isa}\\.cpp$")
        string(TOUPPER ${isa} ISA)
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${STRATA_${ISA}_FLAGS}")
      endif()
    endforeach()
    list(APPEND kept ${src})
  endforeach()
  set(${out} ${kept} PARENT_SCOPE)
endfunction()

function(strata_layer name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp)
  strata_isa_sources(srcs ${srcs})
  set(target strata_${name})
  add_library(${target} STATIC ${srcs} ${CMAKE_SOURCE_DIR}/cmake/empty.cpp)
  target_include_directories(${target} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  foreach(dep ${ARGN})
    target_link_libraries(${target} PUBLIC strata_${dep})
  endforeach()
endfunction()
