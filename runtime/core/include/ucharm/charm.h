// The Charm++-style core: chares, groups, chare arrays, typed entry methods, callbacks,
// reductions, futures, readonly globals, quiescence detection, the GPU Messaging and
// Channel APIs. No code generator and no .ci files: entry methods are ordinary member
// functions, named by member pointers.
//
//   struct Block : ck::ArrayElement<Block, 3> {
//     Block(double init);
//     void recvGhost(int face, std::vector<double> data);
//   };
//   auto blocks = ck::ArrayProxy<Block>::create(ck::dims(4, 4, 4), ck::Map::block, 1.0);
//   blocks(x, y, z).send<&Block::recvGhost>(face, data);   // checked at compile time
//   blocks.send<&Block::recvGhost>(face, data);            // broadcast
//
// This is the header to include; the parts live in ucharm/charm/:
//   basics.h         CkMyPe & co., Index, Map, CollectionRef, SendOpts
//   entry.h          entry-method traits and registration, threaded and post entries
//   message.h        the message envelope, packing, sending invocations and creations
//   proxy.h          ElementProxy, ChareProxy, GroupProxy, ArrayProxy
//   callback.h       CkCallback
//   device_buffer.h  CkDeviceBuffer (GPU Messaging API)
//   future.h         Future<T>
//   reduction.h      Reducer, UserReducer
//   chare.h          ChareBase, Chare, MainChare, Group, ArrayElement, readonly
//   section.h        SectionProxy, CkSectionInfo (sections of chare arrays)
//   channel.h        CkChannel (Channel API)
//   task.h           ck::task<>: coroutine entry methods (co_await futures, callbacks, channels, messages)
//   start.h          start_qd, ck::start<Main>
//   checkpoint.h     start_checkpoint / CkStartCheckpoint, +restart
#pragma once

#include <ucharm/charm/basics.h>
#include <ucharm/charm/entry.h>
#include <ucharm/charm/message.h>
#include <ucharm/charm/proxy.h>
#include <ucharm/charm/callback.h>
#include <ucharm/charm/device_buffer.h>
#include <ucharm/charm/future.h>
#include <ucharm/charm/reduction.h>
#include <ucharm/charm/chare.h>
#include <ucharm/charm/section.h>
#include <ucharm/charm/channel.h>
#include <ucharm/charm/task.h>
#include <ucharm/charm/window.h>
#include <ucharm/charm/device_window.h>
#include <ucharm/charm/start.h>
#include <ucharm/charm/checkpoint.h>
