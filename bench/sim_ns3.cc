// sim_ns3.cc — the ns-3 side of bench/sim_speed.sh: the same topology
// file and flow file that `softrnic sim run` reads (the HPCC simulator's
// formats), simulated with ns-3's own models — point-to-point links,
// drop-tail queues, IPv4 global routing with ECMP, and one OnOff UDP
// application per flow sending its bytes at the host's link rate in
// 1000-byte packets.  No RDMA, no ACKs, no congestion control: ns-3 as a
// reference for the cost of packet-level simulation, not a model of
// RoCE.  Prints one line: wall seconds, events, packet-hops; and on
// stderr, every millisecond of simulated time, the same so far
// ("ns3 progress sim_ms=..."), so that a run stopped early still tells
// how far it got and how fast it went.
//
// usage: sim_ns3 TOPOLOGY FLOWS STOP_SECONDS
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

using namespace ns3;

static uint64_t g_hops;
static std::chrono::steady_clock::time_point g_t0;

static void
Progress()
{
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_t0).count();
    std::fprintf(stderr, "ns3 progress sim_ms=%.0f wall_s=%.3f events=%llu packet_hops=%llu\n",
                 Simulator::Now().GetSeconds() * 1e3, wall, (unsigned long long)Simulator::GetEventCount(),
                 (unsigned long long)g_hops);
    std::fflush(stderr);
    Simulator::Schedule(MilliSeconds(1), &Progress);
}

static void
OnTxEnd(Ptr<const Packet>)
{
    g_hops++;
}

static std::string
Ns3Delay(const std::string& d)
{
    // "1000ns", "0.001ms" -> ns-3's TimeValue strings ("1000ns", "0.001ms")
    return d;
}

int
main(int argc, char** argv)
{
    if (argc != 4)
    {
        std::cerr << "usage: sim_ns3 TOPOLOGY FLOWS STOP_SECONDS\n";
        return 2;
    }
    std::ifstream topo(argv[1]), flows(argv[2]);
    double stop = std::stod(argv[3]);
    unsigned nodes, switches, links;
    if (!(topo >> nodes >> switches >> links))
    {
        std::cerr << "sim_ns3: bad topology\n";
        return 2;
    }
    std::vector<bool> isSwitch(nodes, false);
    for (unsigned i = 0; i < switches; i++)
    {
        unsigned id;
        topo >> id;
        isSwitch[id] = true;
    }
    Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));
    NodeContainer all;
    all.Create(nodes);
    InternetStackHelper stack;
    stack.Install(all);
    std::vector<Ipv4Address> hostAddr(nodes);
    std::vector<DataRate> hostRate(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    for (unsigned i = 0; i < links; i++)
    {
        unsigned a, b;
        std::string rate, delay;
        double err;
        topo >> a >> b >> rate >> delay >> err;
        std::string r = rate;
        size_t p = r.find("Gbps");
        if (p != std::string::npos)
            r = r.substr(0, p) + "Gbps";
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", StringValue(r));
        p2p.SetChannelAttribute("Delay", StringValue(Ns3Delay(delay)));
        NetDeviceContainer d = p2p.Install(all.Get(a), all.Get(b));
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        if (!isSwitch[a])
        {
            hostAddr[a] = ifs.GetAddress(0);
            hostRate[a] = DataRate(r);
        }
        if (!isSwitch[b])
        {
            hostAddr[b] = ifs.GetAddress(1);
            hostRate[b] = DataRate(r);
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/PhyTxEnd",
                                  MakeCallback(&OnTxEnd));

    unsigned n;
    flows >> n;
    std::vector<bool> sink(nodes, false);
    for (unsigned i = 0; i < n; i++)
    {
        unsigned s, d, pg, dport;
        uint64_t size;
        double start;
        if (!(flows >> s >> d >> pg >> dport >> size >> start))
            break;
        if (!sink[d])
        {
            PacketSinkHelper sh("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 100));
            sh.Install(all.Get(d)).Start(Seconds(0));
            sink[d] = true;
        }
        OnOffHelper on("ns3::UdpSocketFactory", InetSocketAddress(hostAddr[d], 100));
        on.SetAttribute("OnTime", StringValue("ns3::ConstantRandomVariable[Constant=1000]"));
        on.SetAttribute("OffTime", StringValue("ns3::ConstantRandomVariable[Constant=0]"));
        on.SetAttribute("DataRate", DataRateValue(hostRate[s]));
        on.SetAttribute("PacketSize", UintegerValue(1000));
        on.SetAttribute("MaxBytes", UintegerValue(size));
        on.Install(all.Get(s)).Start(Seconds(start));
    }
    g_t0 = std::chrono::steady_clock::now();
    Simulator::Schedule(MilliSeconds(1), &Progress);
    Simulator::Stop(Seconds(stop));
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_t0).count();
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    std::printf("ns3 wall_s=%.3f events=%llu packet_hops=%llu\n", wall, (unsigned long long)events,
                (unsigned long long)g_hops);
    return 0;
}
