// The message header and CmiAlloc/CmiFree/reference counts (no network needed).
#include <gtest/gtest.h>
#include <ucharm/converse.h>

#include <cstddef>

TEST(Message, HeaderLayoutIsFixed) {
  EXPECT_EQ(CmiMsgHeaderSizeBytes, 16u);
  EXPECT_EQ(offsetof(CmiMsgHeader, handler), 0u);
  EXPECT_EQ(offsetof(CmiMsgHeader, flags), 2u);
  EXPECT_EQ(offsetof(CmiMsgHeader, srcpe), 4u);
  EXPECT_EQ(offsetof(CmiMsgHeader, size), 8u);
  EXPECT_EQ(offsetof(CmiMsgHeader, prio), 12u);
}

TEST(Message, AllocSetsSizeAndZeroesTheHeader) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + 40);
  EXPECT_EQ(CmiMsgSize(m), CmiMsgHeaderSizeBytes + 40);
  EXPECT_EQ(CmiGetHandler(m), 0);
  EXPECT_EQ(CmiMsgHeaderOf(m)->prio, 0);
  EXPECT_EQ(CmiMsgHeaderOf(m)->flags, 0);
  CmiSetHandler(m, 12);
  CmiSetPriority(m, -4);
  CmiSetExpedited(m);
  EXPECT_EQ(CmiGetHandler(m), 12);
  EXPECT_EQ(CmiMsgHeaderOf(m)->prio, -4);
  EXPECT_TRUE(CmiMsgHeaderOf(m)->flags & CmiMsgExpedited);
  EXPECT_EQ(CmiMsgPayload(m), static_cast<char*>(m) + 16);
  CmiFree(m);
}

TEST(Message, ReferencesAreCounted) {
  void* m = CmiAlloc(100);
  EXPECT_EQ(CmiGetReference(m), 1);
  CmiReference(m);
  EXPECT_EQ(CmiGetReference(m), 2);
  CmiFree(m);
  EXPECT_EQ(CmiGetReference(m), 1);
  CmiFree(m);
}
