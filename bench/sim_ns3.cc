// sim_ns3.cc — the ns-3 side of bench/sim_speed.sh: the same topology
// file and flow file that `softrnic sim run` reads (the HPCC simulator's
// formats), simulated with ns-3's own models — point-to-point links,
// drop-tail queues, shortest-path IPv4 routing with per-packet random
// ECMP (what Ipv4GlobalRouting's RandomEcmpRouting does, looked up from a
// table: EcmpTableRouting below), and one OnOff UDP application per flow
// sending its bytes at the host's link rate in 1000-byte packets.  No
// RDMA, no ACKs, no congestion control: ns-3 as a reference for the cost
// of packet-level simulation, not a model of RoCE.  Prints one line: wall
// seconds, events, packet-hops; and on stderr, every millisecond of
// simulated time, the same so far ("ns3 progress sim_ms=..."), so that a
// run stopped early still tells how far it got and how fast it went.
//
// usage: sim_ns3 TOPOLOGY FLOWS STOP_SECONDS
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

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

// Shortest-path ECMP routing from a table: for every node and every
// destination host, the interfaces that start a minimum-hop path to it
// (a breadth-first search over the topology file's links), one of them
// drawn uniformly at random for each packet.  These are the next hops and
// the choice that Ipv4GlobalRouting with RandomEcmpRouting gives (its SPF
// over unit link metrics finds the same equal-cost next hops, and it too
// draws one per packet), but Ipv4GlobalRouting finds them by scanning
// every host and network route it holds, thousands on each switch of a
// k=8 fat-tree, for every packet at every hop: that scan was most of the
// run's time.  Here a hop's lookup is one hash look-up and an indexing.
class EcmpTableRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("EcmpTableRouting").SetParent<Ipv4RoutingProtocol>().SetGroupName("Internet");
        return tid;
    }

    // host index of each host address (filled once the addresses are known)
    static std::unordered_map<uint32_t, uint32_t> s_hostOf;

    // m_routes[host]: the equal-cost routes from this node toward that host
    std::vector<std::vector<Ptr<Ipv4Route>>> m_routes;
    int64_t m_self = -1; // this node's host index, -1 for a switch

    EcmpTableRouting()
        : m_rand(CreateObject<UniformRandomVariable>())
    {
    }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header& header, Ptr<NetDevice>,
                               Socket::SocketErrno& sockerr) override
    {
        Ptr<Ipv4Route> r = Pick(header.GetDestination());
        sockerr = r ? Socket::ERROR_NOTERROR : Socket::ERROR_NOROUTETOHOST;
        return r;
    }

    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice> idev,
                    UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                    ErrorCallback ecb) override
    {
        auto it = s_hostOf.find(header.GetDestination().Get());
        if (it == s_hostOf.end() || int64_t(it->second) == m_self)
        {
            int32_t iif = m_ipv4->GetInterfaceForDevice(idev);
            if (m_ipv4->IsDestinationAddress(header.GetDestination(), iif))
            {
                lcb(p, header, iif);
                return true;
            }
            return false;
        }
        Ptr<Ipv4Route> r = PickHost(it->second);
        if (!r)
        {
            ecb(p, header, Socket::ERROR_NOROUTETOHOST);
            return true;
        }
        ucb(r, p, header);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const override
    {
        for (size_t h = 0; h < m_routes.size(); h++)
            for (const auto& r : m_routes[h])
                *stream->GetStream() << *r << "\n";
    }

  private:
    Ptr<Ipv4Route> Pick(Ipv4Address dst)
    {
        auto it = s_hostOf.find(dst.Get());
        return it == s_hostOf.end() ? nullptr : PickHost(it->second);
    }

    Ptr<Ipv4Route> PickHost(uint32_t h)
    {
        const auto& v = m_routes[h];
        if (v.empty())
            return nullptr;
        if (v.size() == 1)
            return v[0];
        return v[m_rand->GetInteger(0, v.size() - 1)];
    }

    Ptr<Ipv4> m_ipv4;
    Ptr<UniformRandomVariable> m_rand;
};

std::unordered_map<uint32_t, uint32_t> EcmpTableRouting::s_hostOf;

class EcmpTableRoutingHelper : public Ipv4RoutingHelper
{
  public:
    EcmpTableRoutingHelper* Copy() const override { return new EcmpTableRoutingHelper(*this); }
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node>) const override { return CreateObject<EcmpTableRouting>(); }
};

// Each port's queue: one drop-tail FIFO of this many packets.
// Ipv4AddressHelper::Assign would put ns-3's default queue disc, FqCoDel
// (10240 packets, per-flow fair queueing, CoDel), in front of the
// device's own 100-packet drop-tail queue; that is not the drop-tail
// model this program stands for, and it took about half of the run's
// time.  It is removed, and the device queue holds what the two held
// together (10240 + 100 packets), so as much is buffered and dropped as
// before (packet-hops at 2 ms simulated within 0.2% of FqCoDel's; with
// ns-3's default 100 packets, 6% fewer).
static const char* const kPortQueue = "10340p";

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
    NodeContainer all;
    all.Create(nodes);
    InternetStackHelper stack;
    EcmpTableRoutingHelper ecmp;
    stack.SetRoutingHelper(ecmp);
    stack.Install(all);
    std::vector<Ipv4Address> hostAddr(nodes);
    std::vector<DataRate> hostRate(nodes);
    struct Port
    {
        unsigned peer;     // node at the other end
        uint32_t ifIndex;  // this node's Ipv4 interface on the link
        Ipv4Address local; // this node's address on it
        Ipv4Address gw;    // the peer's address on it
    };
    std::vector<std::vector<Port>> adj(nodes);
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
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kPortQueue));
        NetDeviceContainer d = p2p.Install(all.Get(a), all.Get(b));
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        TrafficControlHelper().Uninstall(d); // Assign's default FqCoDel: see kPortQueue
        adj[a].push_back({b, ifs.Get(0).second, ifs.GetAddress(0), ifs.GetAddress(1)});
        adj[b].push_back({a, ifs.Get(1).second, ifs.GetAddress(1), ifs.GetAddress(0)});
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
    // The routing tables: a breadth-first search from each host.
    std::vector<unsigned> hosts;
    for (unsigned i = 0; i < nodes; i++)
        if (!isSwitch[i])
        {
            EcmpTableRouting::s_hostOf[hostAddr[i].Get()] = hosts.size();
            hosts.push_back(i);
        }
    std::vector<Ptr<EcmpTableRouting>> rt(nodes);
    for (unsigned i = 0; i < nodes; i++)
    {
        rt[i] = DynamicCast<EcmpTableRouting>(all.Get(i)->GetObject<Ipv4>()->GetRoutingProtocol());
        rt[i]->m_routes.resize(hosts.size());
    }
    for (unsigned h = 0; h < hosts.size(); h++)
    {
        rt[hosts[h]]->m_self = h;
        std::vector<int> dist(nodes, -1);
        std::deque<unsigned> q{hosts[h]};
        dist[hosts[h]] = 0;
        while (!q.empty())
        {
            unsigned u = q.front();
            q.pop_front();
            // hosts do not forward: a path never passes through one
            if (u != hosts[h] && !isSwitch[u])
                continue;
            for (const Port& pt : adj[u])
                if (dist[pt.peer] < 0)
                {
                    dist[pt.peer] = dist[u] + 1;
                    q.push_back(pt.peer);
                }
        }
        for (unsigned u = 0; u < nodes; u++)
            if (u != hosts[h] && dist[u] > 0)
                for (const Port& pt : adj[u])
                    if (dist[pt.peer] == dist[u] - 1 && (pt.peer == hosts[h] || isSwitch[pt.peer]))
                    {
                        Ptr<Ipv4Route> r = Create<Ipv4Route>();
                        r->SetDestination(hostAddr[hosts[h]]);
                        r->SetGateway(pt.gw);
                        r->SetSource(pt.local);
                        r->SetOutputDevice(all.Get(u)->GetObject<Ipv4>()->GetNetDevice(pt.ifIndex));
                        rt[u]->m_routes[h].push_back(r);
                    }
    }
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
