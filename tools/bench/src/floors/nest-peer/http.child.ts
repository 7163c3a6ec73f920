// The NestJS peer, part 2: a Nest HTTP app (Express, Nest's default platform) whose GET
// /stores/:id validates the id and asks the stores microservice over NATS.
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  Get,
  Inject,
  Module,
  NotFoundException,
  Param,
  ValidationPipe,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Transport, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { announce } from '../child.js';
import { StoreByIdDto, storesGetSubject } from './dto.js';

const STORES = 'STORES';
const subject = storesGetSubject(process.env.PEER_PREFIX ?? '');

@Controller('stores')
class StoresController {
  // tsx (esbuild) emits no decorator metadata: the token and the DTO are named explicitly.
  constructor(@Inject(STORES) private readonly stores: ClientProxy) {}

  @Get(':id')
  async get(@Param(new ValidationPipe({ expectedType: StoreByIdDto })) params: StoreByIdDto) {
    const store: unknown = await firstValueFrom(this.stores.send(subject, { id: params.id }));
    if (store === null) throw new NotFoundException();
    return store;
  }
}

@Module({
  imports: [
    ClientsModule.register([
      {
        name: STORES,
        transport: Transport.NATS,
        options: { servers: [process.env.NATS_URL ?? ''] },
      },
    ]),
  ],
  controllers: [StoresController],
})
class HttpModule {}

const app = await NestFactory.create(HttpModule, { logger: ['error'] });
await app.listen(0, '127.0.0.1');
announce({ port: ((app.getHttpServer() as Server).address() as AddressInfo).port });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
